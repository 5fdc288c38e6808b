package syntax

import "testing"

func TestLanguages(t *testing.T) {
	tests := []struct {
		path, src, name string
		calls, defs     int
		comments        int
		strs            int
		exits           int
	}{
		{"a.py", `# reset_cc() in a comment
class Cc:
    def reset_cc(self):
        pass

def on_migrate(cc, moved):
    print("reset_cc()")
    if not moved:
        return
    cc.reset_cc()
`, "reset_cc", 1, 1, 1, 1, 1},
		{"a.cc", `// Cc::reset() is virtual
class Cc { public: virtual void reset(); };
void Cc::reset() { cwnd_ = 10; }
void onMigrate(Cc* cc, bool moved) {
  if (!moved) { return; }
  cc->reset();
  log("reset()");
}
`, "reset", 1, 2, 1, 1, 1},
		{"a.go", `package p
// Reset() comment
func Reset() {}
func f(ok bool) {
	if !ok {
		return
	}
	Reset()
	_ = "Reset()"
}
`, "Reset", 1, 1, 1, 1, 1},
		{"a.rs", `// reset() comment
fn reset() {}
fn f(ok: bool) {
    if !ok { return; }
    reset();
    let s = "reset()";
}
`, "reset", 1, 1, 1, 1, 1},
	}
	for _, tc := range tests {
		f, err := Parse(tc.path, []byte(tc.src))
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		ms := f.Mentions(tc.name)
		count := func(k MentionKind) int {
			n := 0
			for _, m := range ms {
				if m.Kind == k {
					n++
				}
			}
			return n
		}
		if got := len(f.Calls(tc.name)); got != tc.calls {
			t.Errorf("%s: calls %d, want %d", tc.path, got, tc.calls)
		}
		if got := len(f.Defs(tc.name)); got != tc.defs {
			t.Errorf("%s: defs %d, want %d (%+v)", tc.path, got, tc.defs, f.Defs(tc.name))
		}
		if got := count(MentionComment); got != tc.comments {
			t.Errorf("%s: comment mentions %d, want %d", tc.path, got, tc.comments)
		}
		if got := count(MentionString); got != tc.strs {
			t.Errorf("%s: string mentions %d, want %d", tc.path, got, tc.strs)
		}
		if tc.path == "a.cc" {
			if ds := f.Defs("reset"); len(ds) != 2 || ds[0].Kind != DefPrototype || ds[0].Owner != "Cc" || ds[1].Kind != DefFunction {
				t.Errorf("C++ method defs: %+v", ds)
			}
		}
		if got := len(f.Exits("")); got != tc.exits {
			t.Errorf("%s: early exits %d, want %d", tc.path, got, tc.exits)
		}
		for _, c := range f.Calls(tc.name) {
			if fn, ok := f.FuncAt(c.Line); !ok || fn.Name != c.Func {
				t.Errorf("%s: FuncAt(%d) = %q, call says %q", tc.path, c.Line, fn.Name, c.Func)
			}
		}
	}
}

func TestUnknownLanguage(t *testing.T) {
	if _, err := Parse("README.md", []byte("x")); err == nil {
		t.Error("parsed a markdown file")
	}
}

// FuzzParse: no input may crash the index (rules run over whatever a
// repository holds at a commit).
func FuzzParse(f *testing.F) {
	f.Add("a.c", "void f(void) { if (x) { g(1, E_A); } }")
	f.Add("a.go", "package p\nfunc f() { if x { return }; g() }")
	f.Add("a.rs", "fn f() { match e { A::B => g(), _ => {} } }")
	f.Add("a.py", "def f():\n    if x:\n        return\n    g()\n")
	f.Add("a.cc", "void C::f() { p->g(); }")
	f.Fuzz(func(t *testing.T, name, src string) {
		file, err := Parse(name, []byte(src))
		if err != nil {
			return
		}
		for _, c := range file.AllCalls() {
			file.Mentions(c.Name)
			file.FuncAt(c.Line)
		}
		file.Exits("")
		file.Assigns("")
	})
}
