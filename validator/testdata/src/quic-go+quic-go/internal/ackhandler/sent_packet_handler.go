package ackhandler

type handler interface {
	MigratedPath(now int, size int)
}

func (h *sentPacketHandler) MigratedPath(now int, size int) {
	h.congestion = newSender(size)
}
