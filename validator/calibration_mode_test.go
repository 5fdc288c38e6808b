package validator

import (
	"fmt"
	"testing"

	"github.com/tidwall/gjson"
)

// A calibration record is re-judged by its own mode: "sanity" records only
// systematic faults (jitter recorded, not judged; throughput faulty only
// when every transfer misses), "strict" or no mode judges every tolerance.
func TestRecordPassesByMode(t *testing.T) {
	const jittery = `"timing":[{"path":"A","configured_ns":20000000,"n":100,"median_ns":20040000,"mean_abs_dev_ns":244236,"pass":%s}]`
	const fastTransfer = `"throughput":[{"path":"A","ceiling_bps":19310000,"min_bps":19310000,"max_bps":19740000,"pass":%s}]`
	tests := []struct {
		name string
		rec  string
		want bool
	}{
		{"sanity: jitter is not a fault", `{"mode":"sanity",` + fmt.Sprintf(jittery, "true") + `,"gates":{"timing":{"pass":true}},"pass":true}`, true},
		{"strict: jitter over 200 µs fails", `{"mode":"strict",` + fmt.Sprintf(jittery, "false") + `,"gates":{"timing":{"pass":false}},"pass":false}`, false},
		{"no mode is strict", `{` + fmt.Sprintf(jittery, "true") + `,"gates":{"timing":{"pass":true}},"pass":true}`, false},
		{"sanity: one transfer above the ceiling is no fault", `{"mode":"sanity",` + fmt.Sprintf(fastTransfer, "true") + `,"gates":{"throughput":{"pass":true}},"pass":true}`, true},
		{"strict: above the ceiling fails", `{"mode":"strict",` + fmt.Sprintf(fastTransfer, "true") + `,"gates":{"throughput":{"pass":true}},"pass":true}`, false},
		{"sanity: a median off by 5 % still fails", `{"mode":"sanity","timing":[{"path":"A","configured_ns":20000000,"n":100,"median_ns":21000000,"mean_abs_dev_ns":1000,"pass":true}],"gates":{"timing":{"pass":true}},"pass":true}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pass, problems := recordPasses(gjson.Parse(tc.rec))
			if ok := pass && len(problems) == 0; ok != tc.want {
				t.Errorf("pass %v, problems %v; want consistent %v", pass, problems, tc.want)
			}
		})
	}
}
