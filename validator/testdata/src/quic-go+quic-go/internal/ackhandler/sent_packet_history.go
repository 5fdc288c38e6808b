package ackhandler

// Synthetic fixture: a lost packet's slot is emptied and skipped.
func (h *sentPacketHistory) Packets() {
	for _, p := range h.packets {
		if p == nil {
			continue
		}
	}
}

func (h *sentPacketHistory) DeclareLost(pn int) {
	idx := h.index(pn)
	h.packets[idx] = nil
}
