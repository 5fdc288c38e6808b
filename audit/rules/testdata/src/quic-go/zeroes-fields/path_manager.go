package quic

type pathManager struct{ initialRTT time.Duration }

func newPathManager(rtt time.Duration) *pathManager { return &pathManager{initialRTT: rtt} }

func (pm *pathManager) nextProbeDelay() time.Duration { return 3 * pm.initialRTT }
