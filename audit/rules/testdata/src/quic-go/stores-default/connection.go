package quic

// A client switching path on purpose, and a server following its peer.

func (c *conn) switchToNewPath(p *path) {
	c.sentPacketHandler.MigratedPath(c.now(), p.maxSize)
}

func (c *conn) handlePeerAddressChange(p *path) {
	if c.perspective == protocol.PerspectiveClient {
		return
	}
	c.sentPacketHandler.MigratedPath(c.now(), p.maxSize)
}
