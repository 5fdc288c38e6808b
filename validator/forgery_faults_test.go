package validator

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue #28: faults planted the way a careful forger works, each change
// carried through everywhere it appears (sha256s updated where a file
// changes). Each must FAIL on a check whose message names the change.

// Requirement texts against the validator's own copy of the RFC sentences.
func TestForgedRequirementTexts(t *testing.T) {
	runPlanted(t, []planted{
		{name: "§9.4 → §9.3 in all entries", check: "lsquic/answers", survey: edit("RFC 9000 §9.4", "RFC 9000 §9.3")},
		{name: "Q3 quotation: MUST NOT → SHOULD NOT in all entries", check: "quic-go/answers", survey: edit(`"Packets sent on the old path MUST NOT`, `"Packets sent on the old path SHOULD NOT`)},
	}, true)
}

// rehash updates the survey's evidence_sha256 of every listed file to
// what the (forged) copy holds now: a forger who knows the file lists
// hashes.
func rehash(t *testing.T, root string, doc map[string]any) {
	t.Helper()
	sums := obj(doc, "inputs", "evidence_sha256")
	for rel := range sums {
		if b, err := os.ReadFile(filepath.Join(root, rel)); err == nil {
			sums[rel] = shaHex(b)
		}
	}
}

// rewriteText replaces old by new in a linked evidence file.
func rewriteText(t *testing.T, root, rel, old, new string) {
	t.Helper()
	b := readFile(t, filepath.Join(root, rel))
	replaceFile(t, root, rel, []byte(strings.ReplaceAll(string(b), old, new)))
}

// forgeVersion changes impl's live version from old to new in every
// manifest (version, binaries, their module hash when given), every
// stdout/stderr and the survey, with hashes updated.
func forgeVersion(name, old, new, oldH1, newH1 string) func(t *testing.T, root string, doc map[string]any) {
	return func(t *testing.T, root string, doc map[string]any) {
		for i := range reps(t, doc, name) {
			dir := filepath.Dir(repManifest(t, doc, name, i))
			entries, _ := os.ReadDir(filepath.Join(root, dir))
			for _, e := range entries {
				if n := e.Name(); n == "manifest.json" || strings.HasSuffix(n, ".stdout") || strings.HasSuffix(n, ".stderr") {
					rewriteText(t, root, filepath.Join(dir, n), old, new)
					if oldH1 != "" {
						rewriteText(t, root, filepath.Join(dir, n), oldH1, newH1)
					}
				}
			}
		}
		replaceAll(t, doc, old, new)
		rehash(t, root, doc)
	}
}

// swapFiles exchanges a file between two repetitions' directories, hashes
// updated.
func swapFiles(name, file string, i, j int) func(t *testing.T, root string, doc map[string]any) {
	return func(t *testing.T, root string, doc map[string]any) {
		a := filepath.Join(filepath.Dir(repManifest(t, doc, name, i)), file)
		b := filepath.Join(filepath.Dir(repManifest(t, doc, name, j)), file)
		ba, bb := readFile(t, filepath.Join(root, a)), readFile(t, filepath.Join(root, b))
		replaceFile(t, root, a, bb)
		replaceFile(t, root, b, ba)
		rehash(t, root, doc)
	}
}

// Live versions against what the traces and the binaries' build records
// hold; analysis.json against the repetition's trace-derived figures.
func TestForgedVersionsAndAnalyses(t *testing.T) {
	runPlanted(t, []planted{
		{name: "quic-go v0.61.0 → v0.60.1 in survey, manifests, stdout", check: "quic-go/live-version",
			files: forgeVersion("quic-go", "v0.61.0", "v0.60.1", "", "")},
		{name: "quic-go v0.61.0-8 → v0.60.0-8 (a real tag, the commit count kept)", check: "quic-go/live-version",
			files: forgeVersion("quic-go", "v0.61.0", "v0.60.0", "", "")},
		{name: "quic-go v0.60.1 with a module hash of its own", check: "quic-go/live-version",
			files: forgeVersion("quic-go", "v0.61.0", "v0.60.1", "h1:ui88A53s8MSVYLC56en0KQ17HARk+9986Dn0SBfKNvA=", "h1:Qzq7VqqeJtYHfPSDoNiJY3rUm8ox3zKiWQxFQmHuKk4=")},
		{name: "ngtcp2 0.12.1 → 0.12.0 in survey and manifests", check: "ngtcp2/live-version",
			files: func(t *testing.T, root string, doc map[string]any) {
				for i := range reps(t, doc, "ngtcp2") {
					editJSON(t, root, repManifest(t, doc, "ngtcp2", i), func(m map[string]any) { m["version"] = "0.12.0" })
				}
				replaceAll(t, doc, `0.12.1`, "0.12.0")
				rehash(t, root, doc)
			}},
		{name: "quic-go rep1 and rep2 analysis.json swapped", check: "quic-go/analysis", files: swapFiles("quic-go", "analysis.json", 0, 1)},
		{name: "msquic rep3 (no reset) and rep4 analysis.json swapped", check: "msquic/analysis", files: swapFiles("msquic", "analysis.json", 2, 3)},
	}, true)
}

// dropRep removes repetition i of name from the survey and renumbers the
// later ones into the freed directories (files moved, every path, id and
// hash in the survey updated; the summary and live figures follow the
// repetitions): the selective report a careful forger would make.
func dropRep(name string, i int, renumber bool) func(t *testing.T, root string, doc map[string]any) {
	return func(t *testing.T, root string, doc map[string]any) {
		rs := reps(t, doc, name)
		kept := append(append([]any{}, rs[:i]...), rs[i+1:]...)
		if renumber {
			for j := i; j < len(kept); j++ {
				r := kept[j].(map[string]any)
				from := filepath.Dir(r["manifest"].(string))
				to := filepath.Join(filepath.Dir(from), fmt.Sprintf("rep%d", j+1))
				os.RemoveAll(filepath.Join(root, to))
				if err := os.Rename(filepath.Join(root, from), filepath.Join(root, to)); err != nil {
					t.Fatal(err)
				}
				b, _ := json.Marshal(r)
				s := strings.ReplaceAll(string(b), from+"/", to+"/")
				s = strings.ReplaceAll(s, `"id":"`+filepath.Base(from)+`"`, `"id":"rep`+fmt.Sprint(j+1)+`"`)
				var m map[string]any
				json.Unmarshal([]byte(s), &m)
				kept[j] = m
			}
		}
		live := obj(impl(t, doc, name), "live")
		live["repetitions"] = kept
		live["retained"] = float64(len(kept))
		live["ip_changes"] = float64(len(kept))
		rehashAll(t, root, doc)
	}
}

// addRep copies repetition i of name as a new last repetition.
func addRep(name string, i int) func(t *testing.T, root string, doc map[string]any) {
	return func(t *testing.T, root string, doc map[string]any) {
		rs := reps(t, doc, name)
		r := rs[i].(map[string]any)
		from := filepath.Dir(r["manifest"].(string))
		n := len(rs) + 1
		to := filepath.Join(filepath.Dir(from), fmt.Sprintf("rep%d", n))
		copyDir(t, filepath.Join(root, from), filepath.Join(root, to))
		b, _ := json.Marshal(r)
		s := strings.ReplaceAll(string(b), from+"/", to+"/")
		s = strings.ReplaceAll(s, `"id":"`+filepath.Base(from)+`"`, fmt.Sprintf(`"id":"rep%d"`, n))
		var m map[string]any
		json.Unmarshal([]byte(s), &m)
		live := obj(impl(t, doc, name), "live")
		live["repetitions"] = append(rs, m)
		live["retained"] = float64(n)
		live["ip_changes"] = float64(n)
		rehashAll(t, root, doc)
	}
}

// rewriteRecord also rewrites the run record to the forged repetitions
// (every valid attempt = a committed repetition, with its digests) and
// the survey's sha256 of it: what a forger who rewrites everything does.
func rewriteRecord(name string, inner func(t *testing.T, root string, doc map[string]any), sayReconstructed bool) func(t *testing.T, root string, doc map[string]any) {
	return func(t *testing.T, root string, doc map[string]any) {
		inner(t, root, doc)
		live := obj(impl(t, doc, name), "live")
		rr := live["run_record"].(map[string]any)
		rel := rr["path"].(string)
		lines := strings.Split(strings.TrimSpace(string(readFile(t, filepath.Join(root, rel)))), "\n")
		out := []string{lines[0]}
		if !sayReconstructed {
			var h map[string]any
			json.Unmarshal([]byte(lines[0]), &h)
			delete(h, "reconstructed")
			b, _ := json.Marshal(h)
			out[0] = string(b)
		}
		for _, x := range reps(t, doc, name) {
			r := x.(map[string]any)
			dir := filepath.Dir(r["manifest"].(string))
			trace, _ := filepath.Rel(dir, r["trace"].(string))
			n := strings.TrimPrefix(filepath.Base(dir), "rep")
			out = append(out, fmt.Sprintf(`{"rep":%s,"attempt":1,"dir":%q,"status":"valid","run_status":"VALID","manifest_sha256":%q,"trace":%q,"trace_sha256":%q}`,
				n, filepath.Base(dir), shaHex(readFile(t, filepath.Join(root, dir, "manifest.json"))), trace, shaHex(readFile(t, filepath.Join(root, r["trace"].(string))))))
		}
		b := []byte(strings.Join(out, "\n") + "\n")
		replaceFile(t, root, rel, b)
		rr["sha256"] = shaHex(b)
		rehashAll(t, root, doc)
	}
}

// rehashAll is rehash plus the survey's list gaining and losing the files
// a fault added or removed under data/evidence.
func rehashAll(t *testing.T, root string, doc map[string]any) {
	t.Helper()
	sums := map[string]any{}
	filepath.WalkDir(filepath.Join(root, "data", "evidence"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			if b, err := os.ReadFile(p); err == nil {
				sums[filepath.ToSlash(rel)] = shaHex(b)
			}
		}
		return nil
	})
	obj(doc, "inputs")["evidence_sha256"] = sums
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	os.MkdirAll(to, 0o755)
	filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
}

// Runs kept whole: the committed repetitions against the run record.
func TestForgedRuns(t *testing.T) {
	runPlanted(t, []planted{
		{name: "msquic's non-resetting rep3 dropped, rep4-5 renumbered", check: "msquic/run-record", files: dropRep("msquic", 2, true)},
		{name: "msquic's rep3 dropped, not renumbered", check: "msquic/run-record", files: dropRep("msquic", 2, false)},
		{name: "quiche rep1 dropped, renumbered, the run record rewritten as the run's own", check: "quiche/run-record",
			files: rewriteRecord("quiche", dropRep("quiche", 0, true), false)},
		{name: "quiche rep1 dropped, renumbered, the run record rewritten, still labelled reconstructed", check: "quiche/run-record",
			files: rewriteRecord("quiche", dropRep("quiche", 0, true), true)},
		{name: "quic-go rep2 copied as rep6", check: "quic-go/run-record", files: addRep("quic-go", 1)},
		{name: "ngtcp2 rep4 and rep5 swapped (renumbered)", check: "ngtcp2/run-record", files: func(t *testing.T, root string, doc map[string]any) {
			rs := reps(t, doc, "ngtcp2")
			a, b := rs[3].(map[string]any), rs[4].(map[string]any)
			a["id"], b["id"] = "rep5", "rep4"
			rs[3], rs[4] = b, a
		}},
		{name: "picoquic: the survey's sha256 of the run record edited", check: "picoquic/run-record", survey: func(t *testing.T, doc map[string]any) {
			obj(impl(t, doc, "picoquic"), "live", "run_record")["sha256"] = strings.Repeat("0", 64)
		}},
	}, true)
}

// setRep edits repetition i of name in the survey.
func setRep(name string, i int, fn func(r map[string]any)) func(t *testing.T, doc map[string]any) {
	return func(t *testing.T, doc map[string]any) { fn(reps(t, doc, name)[i].(map[string]any)) }
}

// Ambiguity is not a pass: an attribution the validator's reading leaves
// undecided must rest on evidence in the repetition.
func TestForgedAttributions(t *testing.T) {
	runPlanted(t, []planted{
		// quic-go rep1's first RTT (40.5 ms) is undecided in the
		// validator's reading (its trace shows the sample acknowledging
		// packet 8819, sent after the migration and a reset: new-path is
		// decided, old-path is the forgery).
		{name: "quic-go rep1: unknown → old-path, q3 UNKNOWN → NO", check: "quic-go/rtt", survey: setRep("quic-go", 0, func(r map[string]any) {
			obj(r, "rtt")["attribution"] = "old-path"
			r["q3"] = "NO"
		})},
		{name: "ngtcp2 rep4: q3 NO → YES (the value is ambiguous, the packet is the old path's)", check: "ngtcp2/rtt", survey: setRep("ngtcp2", 3, func(r map[string]any) {
			r["q3"] = "YES"
		})},
		{name: "quic-go rep1: new-path with wire evidence named that is not there", check: "quic-go/rtt", survey: setRep("quic-go", 0, func(r map[string]any) {
			obj(r, "rtt")["attribution"] = "new-path"
			obj(r, "rtt")["wire_evidence"] = "data/evidence/quic-go/rep1/wire.pcapng.gz"
			r["wire_claims"] = []any{map[string]any{"packet": 8797, "path": "pathB"}}
			r["q3"] = "YES"
		})},
		// picoquic rep2's wire claim names an old-path packet (q3 NO
		// through the packet): moved to the new path in the survey, the
		// validator's reader sees it on the old one.
		{name: "picoquic rep2: the wire claim's path changed to the new path, q3 NO → YES", check: "picoquic/rtt", survey: setRep("picoquic", 1, func(r map[string]any) {
			c := r["wire_claims"].([]any)[0].(map[string]any)
			c["path"] = "pathB"
			r["q3"] = "YES"
		})},
	}, true)
}

// A missing trace makes unverifiable only the claims that need it: the
// answers its repetition could change, and the checks that read it.
func TestMissingTraceUnverifiesOnlyWhatNeedsIt(t *testing.T) {
	base, raw := realWorld(t)
	shadow := shadowRoot(t, repoRoot(t))
	var doc map[string]any
	json.Unmarshal(raw, &doc)
	os.Remove(filepath.Join(shadow, repFile(t, doc, "quiche", 1)))
	v := New(Options{Mirrors: base.opts.Mirrors, Evidence: base.opts.Evidence, RepoRoot: shadow})
	v.sources, v.sites, v.counts = base.sources, base.sites, base.counts
	want := map[string]Status{
		"quiche/Q1":                 Unverifiable, // rep2 could have no reset
		"quiche/Q3":                 Unverifiable, // rep2 could be YES
		"quiche/Q2":                 Pass,         // the RTT is off the default in the others: Q2 has no live answer either way
		"quiche/pin":                Pass,
		"quiche/live-version":       Pass,
		"quiche/rtt":                Unverifiable,
		"quic-go/Q1":                Pass,
		"quiche/evidence-positions": Pass,
	}
	for id, st := range want {
		got, found := checkOne(v, raw, id)
		if !found {
			t.Errorf("no check %s", id)
			continue
		}
		if got.Status != st {
			t.Errorf("%s: %s (%s), want %s", id, got.Status, truncate(got.Found, 200), st)
		}
	}
}

// Constants read again from the source at the pin.
func TestForgedConstants(t *testing.T) {
	mirrorsOrSkip(t)
	runPlanted(t, []planted{
		{name: "lsquic initial window 32×1460 → 30×1460 everywhere, excerpt trimmed", check: "lsquic/constants-source", survey: func(t *testing.T, doc map[string]any) {
			for _, c := range impl(t, doc, "lsquic")["constants"].([]any) {
				cm := c.(map[string]any)
				if cm["name"] == "initial_window" {
					cm["expr"], cm["value"], cm["arithmetic"] = "30*1460", 43800.0, "30*1460 = 43800"
					src := cm["source"].(map[string]any)
					src["excerpt"] = strings.Replace(src["excerpt"].(string), "32 * TCP_MSS", "3", 1)
				}
			}
		}},
		{name: "quic-go default RTT 100 ms → 50 ms everywhere", check: "quic-go/constants-source", survey: func(t *testing.T, doc map[string]any) {
			for _, c := range impl(t, doc, "quic-go")["constants"].([]any) {
				if cm := c.(map[string]any); cm["name"] == "default_rtt" {
					cm["expr"], cm["value"], cm["arithmetic"] = "50*1000", 50000.0, "50*1000 = 50000"
				}
			}
		}},
	}, true)
}

// forgeConstant changes implName's constant name (at source path, "" for any)
// the same way in the survey and in data/constants/<implName>.json: expr and
// params as given, the survey's value and arithmetic to match. inSurvey
// false leaves the survey alone (data/constants changed by itself).
func forgeConstant(implName, name, path, expr string, params map[string]any, value float64, arithmetic string, inSurvey bool) func(t *testing.T, root string, doc map[string]any) {
	set := func(e map[string]any) {
		e["expr"] = expr
		if params != nil {
			e["params"] = params
		}
	}
	at := func(e map[string]any) bool {
		src, _ := e["source"].(map[string]any)
		return path == "" || src != nil && src["path"] == path
	}
	return func(t *testing.T, root string, doc map[string]any) {
		if inSurvey {
			n := 0
			for _, c := range impl(t, doc, implName)["constants"].([]any) {
				if cm := c.(map[string]any); cm["name"] == name && at(cm) {
					set(cm)
					cm["value"], cm["arithmetic"] = value, arithmetic
					n++
				}
			}
			if n == 0 {
				t.Fatalf("no %s %s in the survey's %s", name, path, implName)
			}
		}
		key := map[string]string{"initial_window": "initial_windows", "min_window": "min_window", "loss_factor": "loss_factor", "default_rtt": "default_rtt_us"}[name]
		editJSON(t, root, filepath.Join("data", "constants", implName+".json"), func(m map[string]any) {
			switch e := m[key].(type) {
			case []any:
				for _, x := range e {
					if xm := x.(map[string]any); at(xm) {
						set(xm)
					}
				}
			case map[string]any:
				set(e)
			default:
				t.Fatalf("data/constants/%s.json has no %s", implName, key)
			}
		})
	}
}

// Constants changed consistently in the survey and data/constants: the
// validator's own reading of the source at the pin gives the old value.
// One for each way a reading is put together (a #define, a Go, Rust or
// C++ constant, a struct literal's field, a formula's literal, a packet
// count times a run-time MTU) and one with data/constants changed alone.
func TestForgedConstantsEverywhere(t *testing.T) {
	mirrorsOrSkip(t)
	runPlanted(t, []planted{
		{name: "lsquic BBR initial window 32×1460 → 30×1460 in survey and data/constants", check: "lsquic/constants-source",
			files: forgeConstant("lsquic", "initial_window", "src/liblsquic/lsquic_bbr.c", "30*1460", nil, 43800, "30*1460 = 43800", true)},
		{name: "ngtcp2 loss factor 7/10 → 6/10 everywhere", check: "ngtcp2/constants-source",
			files: forgeConstant("ngtcp2", "loss_factor", "", "6/10", nil, 0.6, "6/10 = 0.6", true)},
		{name: "mvfst minimum window 2 → 3 packets everywhere", check: "mvfst/constants-source",
			files: forgeConstant("mvfst", "min_window", "", "mincwnd_packets*S", map[string]any{"S": 1232, "mincwnd_packets": 3}, 3696, "3*1232 = 3696", true)},
		{name: "tquic default RTT 333 → 250 ms everywhere", check: "tquic/constants-source",
			files: forgeConstant("tquic", "default_rtt", "", "250*1000", nil, 250000, "250*1000 = 250000", true)},
		{name: "msquic initial window 10 → 12 packets at both MTUs everywhere", check: "msquic/constants-source",
			files: func(t *testing.T, root string, doc map[string]any) {
				for _, c := range impl(t, doc, "msquic")["constants"].([]any) {
					if cm := c.(map[string]any); cm["name"] == "initial_window" {
						mtu := cm["params"].(map[string]any)["MTU"].(float64)
						cm["expr"], cm["value"], cm["arithmetic"] = "12*(MTU-20-8)", 12*(mtu-28), fmt.Sprintf("12*(%v-20-8) = %v", mtu, 12*(mtu-28))
					}
				}
				editJSON(t, root, filepath.Join("data", "constants", "msquic.json"), func(m map[string]any) {
					for _, x := range m["initial_windows"].([]any) {
						x.(map[string]any)["expr"] = "12*(MTU-20-8)"
					}
				})
			}},
		{name: "quinn initial window clamp 14720 → 15000 everywhere", check: "quinn/constants-source",
			files: forgeConstant("quinn", "initial_window", "", "min(max(15000, 2*1200), 16*1200)", nil, 15000, "min(max(15000, 2*1200), 16*1200) = 15000", true)},
		{name: "quicly initial window 10 → 8 packets everywhere", check: "quicly/constants-source",
			files: forgeConstant("quicly", "initial_window", "", "max(initcwnd_packets, 2)*min(S, mtu_max)", map[string]any{"S": 1280, "initcwnd_packets": 8, "mtu_max": 1472}, 10240, "max(8, 2)*min(1280, 1472) = 10240", true)},
		{name: "xquic loss factor 718/1024 → 700/1024 in data/constants alone", check: "xquic/constants-source",
			files: forgeConstant("xquic", "loss_factor", "", "700/1024", nil, 0, "", false)},
	}, true)
}
