package wire

import (
	"bufio"
	"bytes"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Wireshark's dissector and this reader agree on the packet numbers of
// every packet both decode (issue #31).
func TestTsharkAgrees(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not installed (apt-get install tshark): the agreement with Wireshark's dissector is not checked")
	}
	c, err := ReadFiles(fixture, keylog)
	if err != nil {
		t.Fatal(err)
	}
	_, port, err := net.SplitHostPort(c.Server)
	if err != nil {
		t.Fatalf("server address %q: %v", c.Server, err)
	}
	plain := filepath.Join(t.TempDir(), "wire.pcapng")
	if err := gunzipTo(fixture, plain); err != nil {
		t.Fatal(err)
	}
	kl, _ := filepath.Abs(keylog)
	cmd := exec.Command(tshark, "-r", plain, "-o", "tls.keylog_file:"+kl, "-d", "udp.port=="+port+",quic",
		"-T", "fields", "-e", "frame.number", "-e", "quic.packet_number")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v: %s", err, stderr.String())
	}
	ours := map[int][]int64{}
	for _, p := range c.Packets {
		ours[p.Record] = append(ours[p.Record], p.PN)
	}
	compared, tsharkOnly := 0, 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		rec, err := strconv.Atoi(f[0])
		if err != nil {
			t.Fatalf("tshark line %q", sc.Text())
		}
		if len(f) < 2 || f[1] == "" {
			continue
		}
		pns := strings.Split(f[1], ",")
		mine := ours[rec]
		if len(mine) != len(pns) {
			t.Errorf("record %d: tshark %d packets %v, reader %d %v", rec, len(pns), pns, len(mine), mine)
			continue
		}
		for i, s := range pns {
			pn, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				t.Fatalf("record %d: tshark packet number %q", rec, s)
			}
			if mine[i] < 0 {
				tsharkOnly++
				continue
			}
			compared++
			if mine[i] != pn {
				t.Errorf("record %d packet %d: tshark packet number %d, reader %d", rec, i, pn, mine[i])
			}
		}
	}
	if tsharkOnly > 0 {
		t.Errorf("%d packets tshark numbers and the reader does not", tsharkOnly)
	}
	if compared < len(c.Packets) {
		t.Errorf("tshark and the reader agree on %d packets; the capture holds %d", compared, len(c.Packets))
	}
	t.Logf("tshark and the reader agree on all %d packet numbers", compared)
}
