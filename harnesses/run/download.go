package run

import (
	"fmt"
	"strconv"
)

// Download follows what a harness client reports of the body it receives:
// "progress", "received" and "done" lines carrying received=N (or, on
// "received", bytes=N) and, on "done", fin=1 when the stream's FIN arrived.
// Each is handed to Progress as it comes.
type Download struct {
	Size     int64
	Received int64
	Fin      bool
	Progress func(done, total int64)
}

// Line takes one client line by its verb and integer fields (field gives
// -1 where absent); it reports whether the verb was one of the three.
func (d *Download) Line(verb string, field func(string) int64) bool {
	switch verb {
	case "progress", "received", "done":
	default:
		return false
	}
	if n := field("received"); n >= 0 {
		d.Received = n
	}
	if n := field("bytes"); verb == "received" && n >= 0 {
		d.Received = n
	}
	if verb == "done" {
		d.Fin = field("fin") == 1
	}
	if d.Progress != nil {
		d.Progress(min(d.Received, d.Size), d.Size)
	}
	return true
}

// Record puts the download's outcome into res: the bytes received, and
// complete when the client exited 0 after the FIN with the whole body;
// served is what the server said it sent (-1 when it said nothing).
func (d *Download) Record(res *RepResult, client Process, served int64) {
	res.ReceivedBytes = d.Received
	res.Completed = client.ExitCode == 0 && d.Fin && d.Received == d.Size
	if served >= 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("server served %d bytes", served))
	}
}

// Fields are a harness line's key=value fields.
type Fields map[string]string

// Int returns a numeric field, or -1 when it is absent or not a number.
func (f Fields) Int(k string) int64 {
	v, err := strconv.ParseInt(f[k], 10, 64)
	if err != nil {
		return -1
	}
	return v
}
