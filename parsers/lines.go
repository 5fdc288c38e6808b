package parsers

import (
	"bytes"
	"io"
)

// nextLine returns the next non-blank line (trailing CR/LF trimmed).
func (s *seqReader) nextLine() ([]byte, int, int64, error) {
	for {
		if s.line == nil {
			if s.err != nil {
				return nil, s.n, s.off, s.err
			}
			s.readLine()
			if s.line == nil {
				continue
			}
		}
		line, off := s.line, s.lineOff
		s.line = nil
		for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
			line = line[:len(line)-1] // bytes.TrimRight(line, "\r\n") without its set
		}
		s.n++
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		return line, s.n, off, nil
	}
}

// eachLine hands fn every non-blank line of in with its line number; an
// error fn returns is reported at that line.
func eachLine(in *input, fn func(line []byte, n int) error) error {
	s := &seqReader{br: in.r}
	for {
		line, n, off, err := s.nextLine()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return in.readErr(err)
		}
		if err := fn(line, n); err != nil {
			return in.errorf(n, off, "%v", err)
		}
	}
}
