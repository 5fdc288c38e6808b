package validator

import (
	"slices"
	"testing"
)

// connectionIDs finds exactly what cidField matches, faster.
func TestConnectionIDsMatchesThePattern(t *testing.T) {
	data := []byte(`{"group_id":"e82f47e132c81941a7e4f5","stream_id":"00000000aa","x":{"dst_connection_id": "2e9f4d87"},"ODCID" : "ABCDEF0123","scid":"abc","description":"154f1af3720a6344","Xconnection_id":"12345678","retire_prior_to_connection_id":"deadbeefdeadbeef"}`)
	var want []string
	for _, m := range cidField().FindAllSubmatch(data, -1) {
		want = append(want, string(m[1]))
	}
	got := connectionIDs(data)
	for i := range want {
		want[i] = toLower(want[i])
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("connectionIDs = %v, the pattern finds %v", got, want)
	}
}

func toLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}
