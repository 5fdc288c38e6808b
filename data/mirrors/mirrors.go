// Package mirrors finds an upstream repository's local copy: a mirror in
// one of the mirror directories (--mirrors, else $MIGAUDIT_MIRRORS) or a
// clone in the user cache directory. It is the one place that knows the
// layouts and the one place that reads $MIGAUDIT_MIRRORS (Resolve, called
// once by the command line, which hands the list down). It imports only
// the standard library, so that the validator may use it too.
package mirrors

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Env names the environment variable holding directories of mirrors,
// separated as $PATH is.
const Env = "MIGAUDIT_MIRRORS"

// ErrNoSource marks a repository that is not here: no mirror and no cache
// clone. Check it with errors.Is.
var ErrNoSource = errors.New("source unavailable")

// Resolve returns the mirror directories to use: flag (a --mirrors value)
// when given, else $MIGAUDIT_MIRRORS.
func Resolve(flag string) string {
	if flag != "" {
		return flag
	}
	return os.Getenv(Env)
}

// OwnerName splits an upstream URL "https://github.com/o/n" into o, n.
func OwnerName(upstream string) (owner, name string) {
	u := strings.TrimSuffix(strings.TrimSuffix(upstream, "/"), ".git")
	parts := strings.Split(u, "/")
	if len(parts) < 2 {
		return "", u
	}
	return parts[len(parts)-2], parts[len(parts)-1]
}

// Candidates lists, in order, where upstream's copy may be under the
// directories of list: <dir>/<owner>+<name>/repo, <dir>/<owner>+<name>,
// <dir>/<name>, <dir>/<name>.git (the cache clones' layout).
func Candidates(list, upstream string) []string {
	owner, name := OwnerName(upstream)
	var out []string
	for _, d := range filepath.SplitList(list) {
		if d == "" {
			continue
		}
		out = append(out,
			filepath.Join(d, owner+"+"+name, "repo"),
			filepath.Join(d, owner+"+"+name),
			filepath.Join(d, name),
			filepath.Join(d, name+".git"))
	}
	return out
}

// CacheDir is where clones made on first use live: <user cache>/migaudit/src,
// each as <name>.git (one of Candidates' layouts).
func CacheDir() (string, error) {
	c, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(c, "migaudit", "src"), nil
}

// WithCache is list followed by CacheDir, for the readers that take a
// clone made on first use as readily as a mirror.
func WithCache(list string) string {
	c, err := CacheDir()
	if err != nil {
		return list
	}
	if list == "" {
		return c
	}
	return list + string(filepath.ListSeparator) + c
}

// Find returns the first git repository among upstream's candidates under
// the directories of list. Without one it returns an error wrapping
// ErrNoSource that names every place it looked.
func Find(list, upstream string) (string, error) {
	tried := Candidates(list, upstream)
	for _, c := range tried {
		if isRepo(c) {
			return c, nil
		}
	}
	if len(tried) == 0 {
		return "", fmt.Errorf("%w: no mirror directory for %s (pass --mirrors or set %s)", ErrNoSource, upstream, Env)
	}
	return "", fmt.Errorf("%w: no mirror of %s: none of %s is a git repository", ErrNoSource, upstream, strings.Join(tried, ", "))
}

// isRepo reports whether dir looks like a bare repository (HEAD and
// objects/) or a work tree (.git).
func isRepo(dir string) bool {
	if st, err := os.Stat(filepath.Join(dir, ".git")); err == nil && st != nil {
		return true
	}
	_, errHead := os.Stat(filepath.Join(dir, "HEAD"))
	st, errObj := os.Stat(filepath.Join(dir, "objects"))
	return errHead == nil && errObj == nil && st.IsDir()
}
