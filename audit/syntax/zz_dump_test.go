package syntax

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// temporary exploration helper (removed before hand-off)
func TestZZDump(t *testing.T) {
	spec := os.Getenv("DUMP")
	if spec == "" {
		t.Skip()
	}
	// DUMP=mirror:commit:path  SYMS=a,b
	parts := strings.SplitN(spec, ":", 3)
	b, err := exec.Command("git", "-C", parts[0], "show", parts[1]+":"+parts[2]).Output()
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(parts[2], b)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range strings.Split(os.Getenv("SYMS"), ",") {
		fmt.Println("==", s)
		for _, d := range f.Defs(s) {
			fmt.Printf("  def %s %s owner=%s val=%q empty=%v\n", d.Pos, d.Kind, d.Owner, d.Value, d.Empty)
		}
		for _, c := range f.Calls(s) {
			fmt.Printf("  call %s in %s callee=%s args=%v guards=%v\n", c.Pos, c.Func, c.Callee, c.Args, c.Guards)
		}
		for _, m := range f.Mentions(s) {
			fmt.Printf("  mention %s %s ctx=%s arg=%d fn=%s\n", m.Pos, m.Kind, m.Context, m.ArgIndex, m.Func)
		}
		for _, a := range f.Assigns(s) {
			fmt.Printf("  assign %s %s %s %s guards=%v\n", a.Pos, a.LHS, a.Op, a.RHS, a.Guards)
		}
	}
}
