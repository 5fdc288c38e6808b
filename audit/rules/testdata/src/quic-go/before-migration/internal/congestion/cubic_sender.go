package congestion

const (
	initialMaxDatagramSize     = protocol.ByteCount(protocol.InitialPacketSizeIPv4)
	renoBeta                   = 0.7
	minCongestionWindowPackets = 2
	initialCongestionWindow    = 32
)
