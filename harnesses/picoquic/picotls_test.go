package picoquic

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestPicotlsCommit(t *testing.T) {
	const a, b, c = "bfa67875982afc4c24f21e146cef4747fa189c2f", "7c32032f91449d695b24b82955f20d04d47e6cff", "f350eab60742138ac62b42ee444adf04c7898b0d"
	cases := []struct {
		name  string
		files map[string]string
		want  string
		from  string
		err   string
	}{
		{"ci script wins", map[string]string{
			"ci/build_picotls.sh": "#!/bin/sh\n# Build at a known-good commit\nCOMMIT_ID=" + a + "\ncd ..\n",
			"CMakeLists.txt":      "set(PICOQUIC_FETCH_PTLS_DEFAULT_TAG \"" + c + "\")\n"},
			a, "ci/build_picotls.sh COMMIT_ID", ""},
		{"ci script with a space (2025)", map[string]string{"ci/build_picotls.sh": "COMMIT_ID= " + c + "\n"}, c, "ci/build_picotls.sh COMMIT_ID", ""},
		{"cmake default tag without AEGIS (2026)", map[string]string{"CMakeLists.txt": "if(WITH_AEGIS)\n    set(PICOQUIC_FETCH_PTLS_DEFAULT_TAG \"" + b + "\")\nelse()\n    set(PICOQUIC_FETCH_PTLS_DEFAULT_TAG \"" + a + "\")\nendif()\n"},
			a, "CMakeLists.txt PICOQUIC_FETCH_PTLS_DEFAULT_TAG (without AEGIS)", ""},
		{"cmake FetchContent GIT_TAG (2025)", map[string]string{"CMakeLists.txt": "    FetchContent_Declare(picotls\n        GIT_REPOSITORY      https://github.com/h2o/picotls.git\n        GIT_TAG             " + c + ")\n"},
			c, "CMakeLists.txt FetchContent picotls GIT_TAG", ""},
		{"nothing names it", map[string]string{"CMakeLists.txt": "project(picoquic)\n"}, "", "", "name no picotls commit"},
		{"no build files", map[string]string{}, "", "", "neither ci/build_picotls.sh nor CMakeLists.txt"},
	}
	for _, tc := range cases {
		read := func(p string) ([]byte, error) {
			if s, ok := tc.files[p]; ok {
				return []byte(s), nil
			}
			return nil, errors.Join(os.ErrNotExist, errors.New(p))
		}
		got, from, err := PicotlsCommit(read)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want || from != tc.from {
			t.Errorf("%s: got %s from %q, %v; want %s from %q", tc.name, got, from, err, tc.want, tc.from)
		}
	}
}

func TestCCName(t *testing.T) {
	for in, want := range map[string]string{"": "newreno", "reno": "newreno", "cubic": "cubic", "bbr": "bbr", "c4": "c4"} {
		if got, err := New(nil).Capabilities().ResolveCC(in); err != nil || got != want {
			t.Errorf("ResolveCC(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := New(nil).Capabilities().ResolveCC("vegas"); err == nil || !strings.Contains(err.Error(), `not "vegas"`) {
		t.Errorf("ResolveCC(vegas): %v", err)
	}
}
