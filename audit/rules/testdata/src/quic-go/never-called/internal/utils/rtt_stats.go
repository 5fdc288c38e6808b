package utils

// DefaultInitialRTT is the RTT assumed before a sample.
const DefaultInitialRTT = 100 * time.Millisecond

func (r *RTTStats) ResetForPathMigration() {
	r.hasMeasurement = false
	r.minRTT.Store(DefaultInitialRTT.Nanoseconds())
	r.latestRTT.Store(DefaultInitialRTT.Nanoseconds())
	r.smoothedRTT.Store(DefaultInitialRTT.Nanoseconds())
	r.meanDeviation.Store(0)
}
