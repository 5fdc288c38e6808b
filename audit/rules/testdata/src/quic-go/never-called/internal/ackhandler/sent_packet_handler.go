package ackhandler

func (h *sentPacketHandler) MigratedPath(now time.Time, size protocol.ByteCount) {
	h.rttStats.ResetForPathMigration()
	for pn := range h.appData.history.Packets() {
		h.appData.history.DeclareLost(pn)
	}
	h.congestion = congestion.NewCubicSender(h.clock, h.rttStats, size, true)
}
