package validator

import (
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
