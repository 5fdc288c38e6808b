package validator

import (
	"bufio"
	"bytes"
	"strings"
)

// The live harnesses built from C and Rust checkouts (quicly, lsquic,
// xquic, quinn) write their own trace formats. liveFormatReader recognises
// one from the start of a decompressed trace and returns its reader, or nil
// for the formats traceFrom's own switch reads. Every reader here is the
// validator's own: it shares no code with parsers/.
func liveFormatReader(head []byte) func([]byte) (*traceFacts, error) {
	switch {
	case bytes.HasPrefix(head, []byte("# quinn-cc-log ")):
		return readQuinnCCLog
	case bytes.HasPrefix(head, []byte("[lsq_")):
		return readLsquicLog
	case bytes.HasPrefix(head, []byte("[xqc_")):
		return readXquicLog
	case len(head) > 0 && head[0] == '{' && quiclyModule(head):
		return readQuiclyLog
	}
	return nil
}

// quiclyModule: the first JSON line names picotls's event-log module
// "quicly" or the quicly harness's "qlyharness".
func quiclyModule(head []byte) bool {
	line, _, _ := bytes.Cut(head, []byte("\n"))
	return bytes.Contains(line, []byte(`"module":"quicly"`)) || bytes.Contains(line, []byte(`"module":"qlyharness"`))
}

// kvFields splits "k=v k=v …" into a map (words without '=' are skipped).
func kvFields(s string) map[string]string {
	kv := map[string]string{}
	for _, f := range strings.Fields(s) {
		if k, v, ok := strings.Cut(f, "="); ok {
			kv[k] = v
		}
	}
	return kv
}

// lines calls fn with each line of data (without its newline), 1-based. A
// final line without its newline was cut off mid-write (a trace of a
// process that was killed) and is skipped.
func lines(data []byte, fn func(n int, line string) error) error {
	if i := bytes.LastIndexByte(data, '\n'); i < len(data)-1 {
		data = data[:i+1]
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		if err := fn(n, sc.Text()); err != nil {
			return err
		}
	}
	return sc.Err()
}

// sent records a packet's first send instant.
func (f *traceFacts) sentAt(pn, t int64) {
	if f.Sent == nil {
		f.Sent = map[int64]int64{}
	}
	if _, dup := f.Sent[pn]; !dup {
		f.Sent[pn] = t
	}
}

func newSample(t int64) sample { return sample{T: t, Cwnd: -1, SRTT: -1, Latest: -1, MinRTT: -1} }

func (s sample) any() bool { return s.Cwnd >= 0 || s.SRTT >= 0 || s.Latest >= 0 || s.MinRTT >= 0 }
