package n9dbg

import (
	"os"
	"os/exec"
	"testing"

	"github.com/migaudit/migaudit/audit/syntax"
)

func TestDump(t *testing.T) {
	repo, commit, path := os.Getenv("R"), os.Getenv("C"), os.Getenv("P")
	b, err := exec.Command("git", "-C", repo, "show", commit+":"+path).Output()
	if err != nil {
		t.Fatal(err)
	}
	f, err := syntax.Parse(path, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Funcs() {
		if os.Getenv("F") == "" || d.Name == os.Getenv("F") {
			t.Logf("%s %s owner=%q %d-%d", d.Kind, d.Name, d.Owner, d.Line, d.EndLine)
		}
	}
}
