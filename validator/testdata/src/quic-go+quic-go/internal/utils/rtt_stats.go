package utils

// Synthetic fixture: the migration reset of the RTT estimator.
const DefaultInitialRTT = 100

func (r *RTTStats) ResetForPathMigration() {
	r.minRTT.Store(DefaultInitialRTT.Nanoseconds())
	r.smoothedRTT.Store(DefaultInitialRTT.Nanoseconds())
}
