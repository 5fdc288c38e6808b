package ackhandler

func (h *sentPacketHistory) DeclareLost(pn protocol.PacketNumber) {
	idx := h.index(pn)
	h.packets[idx] = nil
}

func (h *sentPacketHistory) Packets() iter.Seq2[protocol.PacketNumber, *packet] {
	return func(yield func(protocol.PacketNumber, *packet) bool) {
		for i, p := range h.packets {
			if p == nil {
				continue
			}
			if !yield(h.first+protocol.PacketNumber(i), p) {
				return
			}
		}
	}
}
