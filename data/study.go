package data

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
)

//go:embed study.json
var studyJSON []byte

// StudyFile is one file of the study's repository that migaudit reads, at
// the pinned commit, with the sha256 of its bytes as the repository stores
// them.
type StudyFile struct {
	// Name is the file's name in a reference directory laid out like the
	// study's published sample (traces/…, timelines/…), which is what
	// --evidence DIR overrides with.
	Name string `json:"name"`
	// Path is where the file is in the study's repository.
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	// Role: reference-trace, timeline, upstream-commits, phase1-patched,
	// phase1-unpatched, phase1-patch.
	Role string `json:"role"`
	Impl string `json:"impl,omitempty"`
	Note string `json:"note,omitempty"`
}

// StudyPin is the study as a pinned source: a repository, a commit and the
// files read from it. It is read exactly as an implementation's source is:
// from a mirror, a clone in the cache, or --source.
type StudyPin struct {
	Name     string      `json:"name"`
	Title    string      `json:"title"`
	Upstream string      `json:"upstream"`
	Commit   string      `json:"commit"`
	Files    []StudyFile `json:"files"`
}

// Study returns the embedded study pin (data/study.json).
func Study() (StudyPin, error) {
	var s StudyPin
	if err := json.Unmarshal(studyJSON, &s); err != nil {
		return StudyPin{}, fmt.Errorf("data/study.json: %w", err)
	}
	if len(s.Commit) != 40 || s.Upstream == "" {
		return StudyPin{}, fmt.Errorf("data/study.json: upstream and a full 40-hex commit are required")
	}
	for i, f := range s.Files {
		if f.Name == "" || f.Path == "" || len(f.SHA256) != 64 {
			return StudyPin{}, fmt.Errorf("data/study.json: files[%d]: name, path and a sha256 are required", i)
		}
	}
	return s, nil
}

// File returns the pinned file with the given name or repository path.
func (s StudyPin) File(nameOrPath string) (StudyFile, bool) {
	for _, f := range s.Files {
		if f.Name == nameOrPath || f.Path == nameOrPath {
			return f, true
		}
	}
	return StudyFile{}, false
}

// Role returns the file with the given role for impl ("" matches any).
func (s StudyPin) Role(role, impl string) (StudyFile, bool) {
	for _, f := range s.Files {
		if f.Role == role && (impl == "" || strings.EqualFold(f.Impl, impl)) {
			return f, true
		}
	}
	return StudyFile{}, false
}
