package congestion

const (
	renoBeta                   = 0.7
	minCongestionWindowPackets = 2
	initialCongestionWindow    = 32
)
