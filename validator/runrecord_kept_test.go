package validator

import (
	"strings"
	"testing"
)

// The run record's "kept" lines (migaudit run keep) carry an attempt's
// manifest digest from what the run recorded to what is committed; a
// broken chain is refused.
func TestParseRunRecordKeptLines(t *testing.T) {
	h := `{"record":"migaudit run record v1","implementation":"x","scenario":"standard","wanted":1}`
	a := `{"rep":1,"attempt":1,"dir":"rep1","status":"valid","manifest_sha256":"aaa"}`
	cases := []struct {
		name, rec, want, err string
	}{
		{"no kept line", h + "\n" + a, "aaa", ""},
		{"kept", h + "\n" + a + "\n" + `{"kept":"rep1","manifest_sha256_was":"aaa","manifest_sha256":"bbb"}`, "bbb", ""},
		{"kept twice", h + "\n" + a + "\n" + `{"kept":"rep1","manifest_sha256_was":"aaa","manifest_sha256":"bbb"}` + "\n" + `{"kept":"rep1","manifest_sha256_was":"bbb","manifest_sha256":"ccc"}`, "ccc", ""},
		{"chain broken", h + "\n" + a + "\n" + `{"kept":"rep1","manifest_sha256_was":"zzz","manifest_sha256":"bbb"}`, "", "line 3: kept rep1 from manifest zzz"},
		{"kept before recorded", h + "\n" + `{"kept":"rep1","manifest_sha256_was":"aaa","manifest_sha256":"bbb"}` + "\n" + a, "", "no earlier line records"},
		{"no new digest", h + "\n" + a + "\n" + `{"kept":"rep1","manifest_sha256_was":"aaa"}`, "", "without the new manifest digest"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, at, err := parseRunRecord([]byte(c.rec))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || len(at) != 1 || at[0].manifestSHA != c.want {
				t.Fatalf("%+v, %v; want manifest %s", at, err, c.want)
			}
		})
	}
}
