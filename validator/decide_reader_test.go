package validator

import (
	"strings"
	"testing"
)

// memTree is a sourceTree whose files are given in memory; a path mapped
// to "" is absent (the tree's cached answer for a missing path).
func memTree(files map[string]string) *sourceTree {
	t := &sourceTree{commit: "0000000000000000000000000000000000000000", files: map[string][]string{}}
	for p, s := range files {
		if s == "" {
			t.files[p] = nil
			continue
		}
		t.files[p] = strings.Split(s, "\n")
	}
	return t
}

const readerC = `/* a fixture */
static int helper(int a);

static int helper(int a) {
  if (a) { /* } in a comment */
    return call("}", '}');
  }
  return 0;
}

int other(char x[8]; int y) {
  switch (y) {
  case 1:
    first();
    break;
  case 2:
    second();
  }
}
`

const readerRust = `impl Path {
    pub fn on_response(&mut self, data: [u8; 8]) -> bool {
        let f = |x: &'a u8| { *x };
        self.rtt.update(1);
        true
    }
}
`

const readerPy = `class Sent:
    epoch: int
    path: str

    def handle(self, x):
        if x:
            return 1
        return 0

def after():
    pass
`

func TestReaderBlocks(t *testing.T) {
	r := &reader{t: memTree(map[string]string{"a.c": readerC, "b.rs": readerRust, "c.py": readerPy, "nope.c": ""})}
	tests := []struct {
		name       string
		b          block
		start, end int // 1-based first and last line; 0,0 = not found
		has, hasnt string
	}{
		{"C definition, not the declaration", r.fn("a.c", "^static int helper("), 4, 9, "return 0;", ""},
		{"braces in comments, strings and chars skipped", r.fn("a.c", "^static int helper("), 4, 9, "call(\"}\"", ""},
		{"';' inside parentheses does not end the header", r.fn("a.c", "^int other("), 11, 19, "second();", ""},
		{"inner block", r.fn("a.c", "^static int helper(").inner("if (a) {"), 5, 7, "return call(", "return 0;"},
		{"case span", r.fn("a.c", "^int other(").span("case 1:", "case "), 13, 15, "first();", "second();"},
		{"Rust method with [u8; 8] and a lifetime", r.fn("b.rs", "pub fn on_response("), 2, 6, "self.rtt.update(1);", ""},
		{"Python class body by indentation", r.pyfn("c.py", "class Sent"), 1, 8, "path: str", "def after"},
		{"Python method", r.pyfn("c.py", "def handle("), 5, 8, "return 0", "pass"},
		{"absent definition", r.fn("a.c", "^static int missing("), 0, 0, "", ""},
		{"absent file", r.fn("nope.c", "^int x("), 0, 0, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.start == 0 {
				if tc.b.ok() {
					t.Fatalf("found %d lines at %d", len(tc.b.lines), tc.b.start)
				}
				return
			}
			if !tc.b.ok() {
				t.Fatal("not found")
			}
			if end := tc.b.start + len(tc.b.lines) - 1; tc.b.start != tc.start || end != tc.end {
				t.Fatalf("lines %d–%d, want %d–%d", tc.b.start, end, tc.start, tc.end)
			}
			if tc.has != "" && tc.b.find(tc.has) == 0 {
				t.Errorf("block lacks %q", tc.has)
			}
			if tc.hasnt != "" && tc.b.find(tc.hasnt) != 0 {
				t.Errorf("block contains %q", tc.hasnt)
			}
		})
	}
}

func TestFindSpansLines(t *testing.T) {
	b := block{path: "x.c", start: 10, lines: []string{"foo(a,", "    b);", "bar();"}}
	if got := b.find("foo(a, b);"); got != 10 {
		t.Errorf("multi-line statement found at %d, want 10", got)
	}
	if got := b.find("bar()"); got != 12 {
		t.Errorf("bar() at %d, want 12", got)
	}
	if got := b.count("("); got != 2 {
		t.Errorf("count %d, want 2", got)
	}
}

func TestCombineRoles(t *testing.T) {
	tests := []struct {
		roles map[string]string
		want  string
	}{
		{map[string]string{"migrating": "YES", "observing": "YES"}, "YES"},
		{map[string]string{"migrating": "NO", "observing": "YES"}, "ASYMMETRIC"},
		{map[string]string{"migrating": "NO", "observing": "RESET_KEEPS_RTT"}, "ROLE_DEPENDENT"},
		{map[string]string{"migrating": "NOT_SUPPORTED", "observing": "NO"}, "NO"},
		{map[string]string{"migrating": "N/A", "observing": "NO"}, "NO"},
		{map[string]string{"migrating": "NOT_SUPPORTED", "observing": "NOT_SUPPORTED"}, "NOT_SUPPORTED"},
		{map[string]string{"migrating": "UNKNOWN", "observing": "YES"}, "UNKNOWN"},
		{map[string]string{"migrating": "NO", "observing": "UNKNOWN"}, "UNKNOWN"},
	}
	for _, tc := range tests {
		if got := combineRoles(tc.roles); got != tc.want {
			t.Errorf("%v: %s, want %s", tc.roles, got, tc.want)
		}
	}
}
