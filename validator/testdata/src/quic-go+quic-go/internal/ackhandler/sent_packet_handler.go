package ackhandler

type handler interface {
	MigratedPath(now int, size int)
}

func (h *sentPacketHandler) MigratedPath(now int, size int) {
	h.congestion = newSender(size)
	h.rttStats.ResetForPathMigration()
	for pn := range h.inFlight {
		h.appDataPackets.history.DeclareLost(pn)
	}
	h.congestion = congestion.NewCubicSender(size)
}
