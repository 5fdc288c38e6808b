package validator

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repFile is a repetition's trace path (relative to the repository root).
func repFile(t *testing.T, doc map[string]any, name string, i int) string {
	return reps(t, doc, name)[i].(map[string]any)["trace"].(string)
}

func repManifest(t *testing.T, doc map[string]any, name string, i int) string {
	return reps(t, doc, name)[i].(map[string]any)["manifest"].(string)
}

// copyTrace puts repetition from's trace, decompressed and gzipped again
// (new sha256, same content, edited by fn when given), in place of
// repetition to's, and forges the survey's figures of `to` from `from`'s.
func copyTrace(name string, from, to int, fn func([]byte) []byte) func(t *testing.T, root string, doc map[string]any) {
	return func(t *testing.T, root string, doc map[string]any) {
		content := gunzip(t, readFile(t, filepath.Join(root, repFile(t, doc, name, from))))
		if fn != nil {
			content = fn(content)
		}
		gz := regzip(t, content)
		replaceFile(t, root, repFile(t, doc, name, to), gz)
		forgeRep(t, doc, name, from, to, shaHex(gz))
	}
}

// alsoManifestSHA updates the target run's manifest record of its trace to
// the forged file: a forger who knows the manifest lists file hashes.
func alsoManifestSHA(name string, to int, inner func(t *testing.T, root string, doc map[string]any)) func(t *testing.T, root string, doc map[string]any) {
	return func(t *testing.T, root string, doc map[string]any) {
		inner(t, root, doc)
		trace := repFile(t, doc, name, to)
		man := repManifest(t, doc, name, to)
		rel, _ := filepath.Rel(filepath.Dir(man), trace)
		sum := shaHex(readFile(t, filepath.Join(root, trace)))
		editJSON(t, root, man, func(m map[string]any) {
			for _, f := range m["files"].([]any) {
				if fm := f.(map[string]any); fm["name"] == filepath.ToSlash(rel) {
					fm["sha256"] = sum
				}
			}
		})
	}
}

func setCal(name string, i int, fn func(cal map[string]any)) func(t *testing.T, root string, doc map[string]any) {
	return func(t *testing.T, root string, doc map[string]any) {
		editJSON(t, root, repManifest(t, doc, name, i), func(m map[string]any) { fn(obj(m, "calibration")) })
	}
}

func setKeptCal(name string, fn func(m map[string]any)) func(t *testing.T, root string, doc map[string]any) {
	return func(t *testing.T, root string, doc map[string]any) {
		editJSON(t, root, filepath.Join("data", "evidence", name, "calibration.json"), fn)
	}
}

func timing(cal map[string]any, i int) map[string]any {
	return obj(cal, "record")["timing"].([]any)[i].(map[string]any)
}

// noEvidenceRow is a new implementation row with answers and nothing
// behind them.
func noEvidenceRow(name string, liveAnswers bool) func(t *testing.T, doc map[string]any) {
	return func(t *testing.T, doc map[string]any) {
		var row map[string]any
		b, _ := json.Marshal(impl(t, doc, "xquic"))
		json.Unmarshal(b, &row)
		row["name"] = name
		row["upstream"] = "https://github.com/example/" + name
		row["commit"] = strings.Repeat("ab", 20)
		delete(row, "reachability")
		// The copied row's own live runs are not the planted row's: a row
		// with nothing behind it carries no repetitions.
		for k := range row {
			if strings.HasPrefix(k, "live") {
				delete(row, k)
			}
		}
		row["constants"] = []any{}
		for _, a := range row["answers"].([]any) {
			am := a.(map[string]any)
			am["evidence"] = []any{}
			am["mechanism"] = "handled"
			am["detail"] = ""
			delete(am, "roles")
			if liveAnswers {
				am["live_answer"], am["source_answer"], am["established"], am["agreement"] = "YES", "", "live", "live-only"
				am["answer"] = "YES"
			}
		}
		if liveAnswers {
			row["source_audited"] = false
		}
		doc["implementations"] = append(doc["implementations"].([]any), row)
	}
}

func clearEvidence(name string, qs ...string) func(t *testing.T, doc map[string]any) {
	return func(t *testing.T, doc map[string]any) {
		for _, q := range qs {
			answer(t, doc, name, q)["evidence"] = []any{}
		}
	}
}

func edit(old, new string) func(t *testing.T, doc map[string]any) {
	return func(t *testing.T, doc map[string]any) { replaceAll(t, doc, old, new) }
}

// Group 1: prose. Every figure a sentence states is derived again.
func TestPlantedProse(t *testing.T) {
	runPlanted(t, []planted{
		{name: "quic-go summary: reset observed in 4/5", check: "quic-go/live-summary", survey: edit("reset observed in 5/5", "reset observed in 4/5")},
		{name: "ngtcp2 summary: 6 repetitions", check: "ngtcp2/live-summary", survey: func(t *testing.T, doc map[string]any) {
			obj(impl(t, doc, "ngtcp2"), "live")["summary"] = "6 repetitions, 5 verified IP migrations, reset observed in 5/5"
		}},
		{name: "F1 statement: 2 of 13, quinn dropped", check: "F1/statement", survey: edit("3 of 13 ship a migration reset hook that nothing calls: picoquic, quiche, quinn", "2 of 13 ship a migration reset hook that nothing calls: picoquic, quiche")},
		{name: "F2 statement: 13 distinct", check: "F2/statement", survey: edit("14 distinct mechanisms", "13 distinct mechanisms")},
		{name: "F3 statement: none", check: "F3/statement", survey: edit("1 of 14 use the path-validation round trip as the new path's initial RTT: mvfst", "none of 14 uses the path-validation round trip as the new path's initial RTT")},
		{name: "quic-go mechanism: 3 live call sites (and F2 copy)", check: "quic-go/prose", survey: edit("MigratedPath: 2 live call sites", "MigratedPath: 3 live call sites")},
		{name: "lsquic mechanism: switch_path_to 2 call sites", check: "lsquic/prose", survey: edit("3 call sites: src/liblsquic/lsquic_full_conn_ietf.c:5129 in process_path_response_frame; src/liblsquic/lsquic_full_conn_ietf.c:5144 in process_path_response_frame;", "2 call sites: src/liblsquic/lsquic_full_conn_ietf.c:5129 in process_path_response_frame;")},
		{name: "quiche mechanism: Path::new called at 4 sites", check: "quiche/prose", survey: edit("Path::new called at 3 sites", "Path::new called at 4 sites")},
		{name: "mvfst mechanism: cache call cited at line 890", check: "mvfst/prose", survey: edit("ServerStateMachine.cpp:904", "ServerStateMachine.cpp:890")},
		{name: "quicly mechanism: observing endpoint YES", check: "quicly/prose", survey: edit("observing endpoint: RESET_KEEPS_RTT (promote_path", "observing endpoint: YES (promote_path")},
		{name: "msquic detail: repetitions 5 YES, 0 NO", check: "msquic/prose", survey: edit("repetitions disagree: 4 YES, 1 NO", "repetitions disagree: 5 YES, 0 NO")},
		{name: "neqo mechanism: a sentence repeated", check: "neqo/prose", survey: func(t *testing.T, doc map[string]any) {
			a := answer(t, doc, "neqo", "Q1")
			first := strings.SplitN(a["mechanism"].(string), "; ", 2)[0]
			a["mechanism"] = a["mechanism"].(string) + "; " + first
		}},
	}, true)
}

// Group 2: pins against data/implementations.json, with or without
// --evidence, for the nine implementations outside the study too.
func TestPlantedPins(t *testing.T) {
	mirrors := mirrorsOrSkip(t)
	move := func(name, dir string) func(t *testing.T, doc map[string]any) {
		return func(t *testing.T, doc map[string]any) { movePin(t, mirrors, doc, name, dir) }
	}
	runPlanted(t, []planted{
		{name: "lsquic moved to its pin's parent", check: "lsquic/pin", survey: move("lsquic", "litespeedtech+lsquic")},
		{name: "neqo moved to its pin's parent", check: "neqo/pin", survey: move("neqo", "mozilla+neqo")},
		{name: "xquic moved to its pin's parent", check: "xquic/pin", survey: move("xquic", "alibaba+xquic")},
		{name: "s2n-quic moved to its pin's parent", check: "s2n-quic/pin", survey: move("s2n-quic", "aws+s2n-quic")},
	}, true)
}

// Group 3: a repetition's trace copied into another's directory, gzipped
// again, with the survey's figures copied along.
func TestPlantedCopiedRepetitions(t *testing.T) {
	runPlanted(t, []planted{
		{name: "quic-go rep1's trace as rep2", check: "quic-go/run-identity", files: copyTrace("quic-go", 0, 1, nil)},
		{name: "ngtcp2 rep1's trace as rep3", check: "ngtcp2/run-identity", files: copyTrace("ngtcp2", 0, 2, nil)},
		{name: "quiche rep2's timeline as rep4", check: "quiche/run-identity", files: copyTrace("quiche", 1, 3, nil)},
		{name: "quic-go rep1's trace as rep2, manifest hash updated", check: "quic-go/run-identity", files: alsoManifestSHA("quic-go", 1, copyTrace("quic-go", 0, 1, nil))},
		{name: "ngtcp2 rep2's trace, one byte edited, as rep4, manifest hash updated", check: "ngtcp2/run-identity", files: alsoManifestSHA("ngtcp2", 3, copyTrace("ngtcp2", 1, 3, func(b []byte) []byte {
			return []byte(strings.Replace(string(b), `"time":`, `"time": `, 1))
		}))},
	}, true)
}

// Group 4: answers with nothing behind them.
func TestPlantedRowsWithoutEvidence(t *testing.T) {
	runPlanted(t, []planted{
		{name: "new row with source answers and no evidence", check: "newquic/evidence-backing", survey: noEvidenceRow("newquic", false)},
		{name: "new row with live answers and no repetitions", check: "livequic/evidence-backing", survey: noEvidenceRow("livequic", true)},
		{name: "aioquic Q2 without its evidence", check: "aioquic/evidence-backing", survey: clearEvidence("aioquic", "Q2")},
		{name: "tquic Q1 and Q3 without evidence", check: "tquic/evidence-backing", survey: clearEvidence("tquic", "Q1", "Q3")},
	}, true)
}

// Group 5: what the manifest, the kept calibration record and the survey
// say about calibration agree with the record's own figures.
func TestPlantedCalibration(t *testing.T) {
	runPlanted(t, []planted{
		{name: "quic-go calibration.json says calibrated false", check: "quic-go/calibration", files: setKeptCal("quic-go", func(m map[string]any) {
			m["calibrated"], m["passed"] = false, false
		})},
		{name: "ngtcp2 rep2 timing median 5% off, still pass", check: "ngtcp2/calibration", files: setCal("ngtcp2", 1, func(cal map[string]any) {
			tm := timing(cal, 0)
			tm["median_ns"] = tm["configured_ns"].(float64) * 1.05
		})},
		{name: "quiche rep3 record did not pass", check: "quiche/calibration", files: setCal("quiche", 2, func(cal map[string]any) {
			obj(cal, "record")["pass"] = false
		})},
		{name: "quic-go rep4 uncalibrated, survey silent", check: "quic-go/calibration", files: setCal("quic-go", 3, func(cal map[string]any) {
			cal["calibrated"] = false
		})},
		{name: "ngtcp2 calibration.json record failed", check: "ngtcp2/calibration", files: setKeptCal("ngtcp2", func(m map[string]any) {
			obj(m, "record")["pass"] = false
		})},
	}, true)
}

func mirrorsOrSkip(t *testing.T) string {
	realWorld(t)
	return mirrorDirEnv()
}

func mirrorDirEnv() string { return os.Getenv("MIGAUDIT_MIRRORS") }
