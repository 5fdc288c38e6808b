package validator

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
)

func TestDecideDev(t *testing.T) {
	m := os.Getenv("MIGAUDIT_MIRRORS")
	want := os.Getenv("DEV_IMPL")
	if m == "" || want == "" {
		t.Skip()
	}
	for _, spec := range strings.Split(os.Getenv("DEV_COMMITS"), ",") {
		p := strings.SplitN(spec, "@", 2)
		ds, err := Decide(m, want, p[0], p[1])
		if err != nil {
			t.Fatal(err)
		}
		var qs []string
		for q := range ds {
			qs = append(qs, q)
		}
		sort.Strings(qs)
		for _, q := range qs {
			fmt.Printf("%s %s %s %v\n", p[1][:8], q, ds[q].Answer, ds[q].Roles)
			for _, f := range ds[q].Facts {
				fmt.Printf("     %s\n", f)
			}
		}
	}
}
