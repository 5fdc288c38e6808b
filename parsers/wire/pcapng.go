package wire

import (
	"fmt"
	"io"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// The capture is read with gopacket's pcapgo (section header, interface
// descriptions with if_name, if_tsresol and if_tsoffset, enhanced and
// simple packet blocks with their comments); ngReader only hands the
// decoder each record with its interface.

const (
	linkTypeRaw  = uint16(layers.LinkTypeRaw)
	linkTypeIPv4 = uint16(layers.LinkTypeIPv4)
	linkTypeIPv6 = uint16(layers.LinkTypeIPv6)
)

type ngInterface struct {
	name     string
	linkType uint16
}

// ngRecord is one packet record.
type ngRecord struct {
	iface    int
	unixNS   int64
	capLen   int
	origLen  int
	data     []byte
	comments []string
}

type ngReader struct {
	lib     *pcapgo.NgReader
	ifaces  []ngInterface
	comment string // the first section's comment
}

func newNgReader(r io.Reader) (*ngReader, error) {
	lib, err := pcapgo.NewNgReader(r, pcapgo.NgReaderOptions{WantMixedLinkType: true})
	if err != nil {
		return nil, err
	}
	return &ngReader{lib: lib, comment: lib.SectionInfo().Comment}, nil
}

// next returns the next packet record, io.EOF after the last.
func (n *ngReader) next() (ngRecord, error) {
	data, ci, opts, err := n.lib.ReadPacketDataWithOptions()
	if err != nil {
		return ngRecord{}, err
	}
	for len(n.ifaces) < n.lib.NInterfaces() {
		i, err := n.lib.Interface(len(n.ifaces))
		if err != nil {
			return ngRecord{}, err
		}
		n.ifaces = append(n.ifaces, ngInterface{name: i.Name, linkType: uint16(i.LinkType)})
	}
	if ci.InterfaceIndex < 0 || ci.InterfaceIndex >= len(n.ifaces) {
		return ngRecord{}, fmt.Errorf("packet on interface %d, which no interface description block declares", ci.InterfaceIndex)
	}
	return ngRecord{iface: ci.InterfaceIndex, unixNS: ci.Timestamp.UnixNano(), capLen: ci.CaptureLength, origLen: ci.Length,
		data: data, comments: opts.Comments}, nil
}
