package validator

// Own-run and reference repetitions: each has its own trace, its hash,
// its manifest.

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"

	"github.com/migaudit/migaudit/survey"
	"github.com/tidwall/gjson"
)

// repTrace loads a repetition's trace, or says why it cannot.
func (v *Validator) repTrace(im, rep gjson.Result) (*traceFacts, error) {
	p, err := v.resolve(im.Get("live.origin").String(), rep.Get("trace").String())
	if err != nil {
		return nil, err
	}
	return v.trace(p)
}

func liveErr(d *verdict, id string, err error) {
	if errors.Is(err, errNoSource) {
		d.unverifiable("%s: %v", id, err)
	} else {
		d.fail("%s: %v", id, err)
	}
}

// noLive handles entries without live evidence.
func noLive(d *verdict, im gjson.Result) bool {
	if !im.Get("live").Exists() || len(im.Get("live.repetitions").Array()) == 0 {
		d.unverifiable("no live evidence for %s", im.Get("name").String())
		return true
	}
	return false
}

// checkRepetitions: every repetition has its own trace on disk with the
// recorded hash, no two share one (the study once lost a repetition to an
// overwrite), own runs have a manifest, and the retained count is right.
func checkRepetitions(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	if noLive(&d, im) {
		return d.result()
	}
	reps := im.Get("live.repetitions").Array()
	if n := int(im.Get("live.retained").Int()); n != len(reps) {
		d.fail("retained says %d, %d repetitions listed", n, len(reps))
	}
	origin := im.Get("live.origin").String()
	seen := map[string]string{}
	ok := 0
	for _, rep := range reps {
		id := rep.Get("id").String()
		sha := rep.Get("trace_sha256").String()
		if prev, dup := seen[sha]; dup {
			d.fail("%s and %s have the same trace (sha256 %s…): one overwrote the other", prev, id, sha[:min(12, len(sha))])
		}
		seen[sha] = id
		p, err := v.resolve(origin, rep.Get("trace").String())
		if err != nil {
			liveErr(&d, id, err)
			continue
		}
		got, err := v.fileSHA(p)
		if err != nil {
			if os.IsNotExist(err) && origin == survey.Reference {
				d.unverifiable("%s: %s absent", id, p)
			} else {
				d.fail("%s: %v", id, err)
			}
			continue
		}
		if got != sha {
			d.fail("%s: %s has sha256 %s…, survey says %s…", id, rep.Get("trace").String(), got[:12], sha[:min(12, len(sha))])
			continue
		}
		if origin == survey.OwnRuns {
			m := rep.Get("manifest").String()
			if m == "" {
				d.fail("%s: own run without a manifest", id)
				continue
			}
			if mp, _ := v.resolve(origin, m); !exists(mp) {
				d.fail("%s: manifest %s absent", id, m)
				continue
			}
		}
		ok++
	}
	d.note("%d/%d repetitions retained with distinct traces (%s)", ok, len(reps), origin)
	return d.result()
}

// fileSHA hashes a file once per validator.
func (v *Validator) fileSHA(p string) (string, error) {
	p = canonical(p)
	v.mu.Lock()
	if h, ok := v.shas[p]; ok {
		v.mu.Unlock()
		return h, nil
	}
	v.mu.Unlock()
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	h := hex.EncodeToString(sum[:])
	v.mu.Lock()
	v.shas[p] = h
	v.mu.Unlock()
	return h, nil
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }
