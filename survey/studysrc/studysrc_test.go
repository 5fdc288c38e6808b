package studysrc

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/migaudit/migaudit/data"
)

const upstream = "https://github.com/example/study"

// studyRepo commits files into a mirror directory laid out as
// <mirrors>/example+study/repo and returns the pin for them.
func studyRepo(t *testing.T, files map[string]string) (mirrors string, pin data.StudyPin) {
	t.Helper()
	mirrors = t.TempDir()
	dir := filepath.Join(mirrors, "example+study", "repo")
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, _ := repo.Worktree()
	pin = data.StudyPin{Name: "study", Upstream: upstream}
	for p, c := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		wt.Add(p)
		pin.Files = append(pin.Files, data.StudyFile{Name: "timelines/" + filepath.Base(p), Path: p, SHA256: SHA256([]byte(c)), Role: "timeline"})
	}
	sig := &object.Signature{Name: "s", Email: "s@example.invalid", When: time.Unix(1780000000, 0)}
	h, err := wt.Commit("study", &git.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		t.Fatal(err)
	}
	pin.Commit = h.String()
	// A later commit changes the file: the pin, not the branch head, is read.
	os.WriteFile(filepath.Join(dir, pin.Files[0].Path), []byte("edited after the pin"), 0o644)
	wt.Add(pin.Files[0].Path)
	if _, err := wt.Commit("later", &git.CommitOptions{Author: sig, Committer: sig}); err != nil {
		t.Fatal(err)
	}
	return mirrors, pin
}

func TestReadAtThePin(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	mirrors, pin := studyRepo(t, map[string]string{"evidence/a.csv": "time_us,cwnd\n0,1\n"})
	s, err := NewWith(pin, Options{Mirrors: mirrors, NoClone: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"timelines/a.csv", "evidence/a.csv"} {
		b, f, err := s.Read(name)
		if err != nil || string(b) != "time_us,cwnd\n0,1\n" || f.Path != "evidence/a.csv" {
			t.Fatalf("Read(%s) = %q, %+v, %v", name, b, f, err)
		}
	}
	p, _, err := s.Path("timelines/a.csv")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "time_us,cwnd\n0,1\n" || !strings.Contains(p, pin.Commit) {
		t.Errorf("Path = %s holding %q", p, b)
	}
	if s.Time().Unix() != 1780000000 {
		t.Errorf("commit time %v", s.Time())
	}
	if _, _, err := s.Read("timelines/none.csv"); err == nil || !strings.Contains(err.Error(), "not pinned") {
		t.Errorf("unpinned name: %v", err)
	}
}

func TestShaMismatchNamesTheFile(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	mirrors, pin := studyRepo(t, map[string]string{"evidence/a.csv": "x\n"})
	pin.Files[0].SHA256 = strings.Repeat("0", 64)
	s, _ := NewWith(pin, Options{Mirrors: mirrors, NoClone: true})
	_, _, err := s.Read("timelines/a.csv")
	if err == nil || !strings.Contains(err.Error(), "evidence/a.csv") || !strings.Contains(err.Error(), "data/study.json pins") {
		t.Fatalf("err = %v", err)
	}
}

func TestEvidenceOverride(t *testing.T) {
	_, pin := studyRepo(t, map[string]string{"evidence/a.csv": "time_us,cwnd\n0,1\n"})
	tests := []struct {
		name    string
		file    string
		content []byte
		ok      bool
	}{
		{"by name", "timelines/a.csv", []byte("time_us,cwnd\n0,1\n"), true},
		{"by repository path", "evidence/a.csv", []byte("time_us,cwnd\n0,1\n"), true},
		{"gzipped as the published sample", "timelines/a.csv.gz", gz([]byte("time_us,cwnd\n0,1\n")), true},
		{"different bytes", "timelines/a.csv", []byte("time_us,cwnd\n0,2\n"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.MkdirAll(filepath.Dir(filepath.Join(dir, tc.file)), 0o755)
			os.WriteFile(filepath.Join(dir, tc.file), tc.content, 0o644)
			s, _ := NewWith(pin, Options{Evidence: dir})
			_, _, err := s.Read("timelines/a.csv")
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestNoMirrorIsOneLine(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("MIGAUDIT_MIRRORS", "")
	_, pin := studyRepo(t, map[string]string{"a": "a"})
	s, _ := NewWith(pin, Options{Mirrors: t.TempDir(), NoClone: true})
	err := s.Open()
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), upstream) {
		t.Fatalf("err = %v", err)
	}
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}
