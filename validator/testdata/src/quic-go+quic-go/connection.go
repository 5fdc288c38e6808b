package quic

// Synthetic fixture for the validator's tests: two real calls, a comment
// mention that is not a call, and a string that is not a call.
func (c *conn) switchToNewPath() {
	c.sentPacketHandler.MigratedPath(now, initialPacketSize)
}

func (c *conn) handlePacket() {
	// MigratedPath(now) is only mentioned here
	_ = "MigratedPath(x)"
	c.sentPacketHandler.MigratedPath(p.rcvTime, size)
}
