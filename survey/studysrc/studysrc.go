// Package studysrc reads the study's evidence from its pinned repository
// (data/study.json) exactly as an implementation's source is read: a bare
// mirror or clone (--source, the mirror directories, $MIGAUDIT_MIRRORS), or
// a clone in the user cache directory, made on first use. Every file is
// checked against its pinned sha256 before use. A directory laid out like
// the study's published sample (--evidence DIR) overrides the repository.
package studysrc

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"github.com/migaudit/migaudit/data/mirrors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/migaudit/migaudit/audit/gitsrc"
	"github.com/migaudit/migaudit/data"
	"github.com/migaudit/migaudit/data/atomicfile"
)

// Options say where the study's repository is.
type Options struct {
	// Mirrors are directories of mirrors (<owner>+<name>/repo), separated
	// by the list separator, as the command line resolved them (--mirrors,
	// else $MIGAUDIT_MIRRORS); the cache clones are searched after them.
	Mirrors string
	// Source is a clone or bare mirror of the study's repository.
	Source string
	// Evidence overrides the repository with a directory holding the files
	// by their reference name (traces/…, timelines/…) or repository path.
	Evidence string
	// NoClone looks only for an existing mirror or cache clone (survey,
	// validate and report); reproduce clones on first use.
	NoClone bool
	// Cache is where files read from git are kept for the readers that take
	// a path (default: <user cache dir>/migaudit/study).
	Cache string
}

// Source is the opened study.
type Source struct {
	Pin  data.StudyPin
	opts Options

	once sync.Once
	snap *gitsrc.Snapshot
	err  error
}

// New returns the study source pinned in data/study.json; the repository
// is opened on first use.
func New(o Options) (*Source, error) {
	pin, err := data.Study()
	if err != nil {
		return nil, err
	}
	return NewWith(pin, o)
}

// NewWith returns the source of another pin (tests build small studies).
func NewWith(pin data.StudyPin, o Options) (*Source, error) {
	if o.Cache == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			c = os.TempDir()
		}
		o.Cache = filepath.Join(c, "migaudit", "study")
	}
	return &Source{Pin: pin, opts: o}, nil
}

// Locate finds the study's repository: source, then the mirror
// directories, then the cache clone (cloned on first use, which needs
// network).
func Locate(upstream, mirrors, source string) (*gitsrc.Repo, error) {
	return locate(upstream, mirrors, source, false)
}

func locate(upstream, list, source string, noClone bool) (*gitsrc.Repo, error) {
	if source != "" {
		return gitsrc.Open(source)
	}
	d, err := mirrors.Find(mirrors.WithCache(list), upstream)
	if err == nil {
		return gitsrc.Open(d)
	}
	if noClone {
		return nil, fmt.Errorf("%w (pass --mirrors, set %s, or run migaudit reproduce, which clones it)", err, mirrors.Env)
	}
	return gitsrc.Locate(upstream, "")
}

// Open opens the repository at the pinned commit (once).
func (s *Source) Open() error {
	if s.opts.Evidence != "" {
		return nil
	}
	s.once.Do(func() {
		r, err := locate(s.Pin.Upstream, s.opts.Mirrors, s.opts.Source, s.opts.NoClone)
		if err != nil {
			s.err = fmt.Errorf("study %s: %w", s.Pin.Upstream, err)
			return
		}
		snap, err := r.At(s.Pin.Commit)
		if err != nil {
			s.err = fmt.Errorf("study %s: %w", s.Pin.Upstream, err)
			return
		}
		s.snap = snap
	})
	return s.err
}

// Where says where the files come from, for messages.
func (s *Source) Where() string {
	if s.opts.Evidence != "" {
		return s.opts.Evidence
	}
	if s.snap != nil {
		return s.snap.Commit()[:12] + " in " + s.snapDir()
	}
	return s.Pin.Upstream + "@" + s.Pin.Commit[:12]
}

func (s *Source) snapDir() string { return s.snap.Dir() }

// Read returns a pinned file's bytes (as the repository stores them), by
// its name or repository path, after checking them against the pin.
func (s *Source) Read(name string) ([]byte, data.StudyFile, error) {
	f, ok := s.Pin.File(name)
	if !ok {
		return nil, f, fmt.Errorf("study: %s is not pinned in data/study.json", name)
	}
	var b []byte
	var from string
	if s.opts.Evidence != "" {
		var err error
		b, from, err = s.fromDir(f)
		if err != nil {
			return nil, f, err
		}
	} else {
		if err := s.Open(); err != nil {
			return nil, f, err
		}
		var err error
		b, err = s.snap.ReadFile(f.Path)
		if err != nil {
			return nil, f, fmt.Errorf("study: %w", err)
		}
		from = f.Path + " at " + s.snap.Commit()[:12]
	}
	if got := SHA256(b); got != f.SHA256 {
		return nil, f, fmt.Errorf("study: %s has sha256 %s, data/study.json pins %s", from, got, f.SHA256)
	}
	return b, f, nil
}

// fromDir reads f from the override directory: by its reference name,
// gzipped reference name (content compared decompressed) or repository path.
func (s *Source) fromDir(f data.StudyFile) ([]byte, string, error) {
	for _, rel := range []string{f.Name, f.Path, f.Name + ".gz"} {
		p := filepath.Join(s.opts.Evidence, filepath.FromSlash(rel))
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if strings.HasSuffix(rel, ".gz") && !strings.HasSuffix(f.Path, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return nil, p, fmt.Errorf("study: %s: %w", p, err)
			}
			if b, err = io.ReadAll(zr); err != nil {
				return nil, p, fmt.Errorf("study: %s: %w", p, err)
			}
		}
		return b, p, nil
	}
	return nil, "", fmt.Errorf("study: %s absent from --evidence %s (looked for %s and %s)", f.Name, s.opts.Evidence, f.Name, f.Path)
}

// Path returns a local file holding the pinned file's bytes (kept in the
// cache directory, keyed by commit and path), for readers that take a path.
func (s *Source) Path(name string) (string, data.StudyFile, error) {
	b, f, err := s.Read(name)
	if err != nil {
		return "", f, err
	}
	p := filepath.Join(s.opts.Cache, s.Pin.Commit, filepath.FromSlash(f.Path))
	if old, err := os.ReadFile(p); err == nil && SHA256(old) == f.SHA256 {
		return p, f, nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", f, fmt.Errorf("study cache: %w", err)
	}
	if err := atomicfile.Write(p, b); err != nil {
		return "", f, fmt.Errorf("study cache: %w", err)
	}
	return p, f, nil
}

// SHA256 is the hex sha256 of b.
func SHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Time is the pinned commit's date (zero with --evidence).
func (s *Source) Time() time.Time {
	if s.snap == nil {
		return time.Time{}
	}
	return s.snap.Time()
}
