package quic

// No path migration: packets keep going to the handshake's address.
func (c *conn) handlePacket(p receivedPacket) { c.handlePacketImpl(p) }
