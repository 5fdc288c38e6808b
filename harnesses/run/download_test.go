package run

import (
	"reflect"
	"testing"
)

func TestDownload(t *testing.T) {
	type line struct {
		verb   string
		fields map[string]int64
	}
	tests := []struct {
		name     string
		lines    []line
		exit     int
		served   int64
		complete bool
		received int64
		progress []int64
		notes    []string
	}{
		{"whole body and FIN", []line{{"progress", map[string]int64{"received": 400}}, {"received", map[string]int64{"bytes": 1000}}, {"done", map[string]int64{"received": 1000, "fin": 1}}},
			0, 1000, true, 1000, []int64{400, 1000, 1000}, []string{"server served 1000 bytes"}},
		{"no FIN", []line{{"done", map[string]int64{"received": 1000, "fin": 0}}}, 0, -1, false, 1000, []int64{1000}, nil},
		{"short body", []line{{"done", map[string]int64{"received": 999, "fin": 1}}}, 0, -1, false, 999, []int64{999}, nil},
		{"client failed", []line{{"done", map[string]int64{"received": 1000, "fin": 1}}}, 1, -1, false, 1000, []int64{1000}, nil},
		{"more than the body is shown as the body", []line{{"progress", map[string]int64{"received": 1200}}}, 0, -1, false, 1200, []int64{1000}, nil},
		{"bytes counts only on received", []line{{"progress", map[string]int64{"bytes": 700}}, {"migrate", map[string]int64{"received": 5}}}, 0, -1, false, 0, []int64{0}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var shown []int64
			d := Download{Size: 1000, Progress: func(done, total int64) {
				if total != 1000 {
					t.Errorf("progress total %d", total)
				}
				shown = append(shown, done)
			}}
			for _, l := range tc.lines {
				field := func(k string) int64 {
					if v, ok := l.fields[k]; ok {
						return v
					}
					return -1
				}
				want := l.verb == "progress" || l.verb == "received" || l.verb == "done"
				if got := d.Line(l.verb, field); got != want {
					t.Errorf("Line(%q) = %v", l.verb, got)
				}
			}
			var res RepResult
			d.Record(&res, Process{ExitCode: tc.exit}, tc.served)
			if res.Completed != tc.complete || res.ReceivedBytes != tc.received || !reflect.DeepEqual(shown, tc.progress) || !reflect.DeepEqual(res.Notes, tc.notes) {
				t.Errorf("completed %v received %d progress %v notes %q; want %v %d %v %q", res.Completed, res.ReceivedBytes, shown, res.Notes, tc.complete, tc.received, tc.progress, tc.notes)
			}
		})
	}
}

func TestFieldsInt(t *testing.T) {
	f := Fields{"n": "1234", "neg": "-5", "text": "x", "empty": "", "big": "99999999999999999999"}
	for k, want := range map[string]int64{"n": 1234, "neg": -5, "text": -1, "empty": -1, "absent": -1, "big": -1} {
		if got := f.Int(k); got != want {
			t.Errorf("Int(%q) = %d, want %d", k, got, want)
		}
	}
}
