package quic

// MigratedPath exists but nothing calls it (a comment naming
// c.sentPacketHandler.MigratedPath() is not a call).
func (c *conn) switchToNewPath(p *path) {
	c.logger.Debugf("sentPacketHandler.MigratedPath(%v)", p)
}
