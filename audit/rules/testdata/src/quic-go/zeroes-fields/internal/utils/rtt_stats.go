package utils

const (
	rttAlpha          = 0.125
	defaultInitialRTT = 100 * time.Millisecond
)

// PTO falls back to the default while there is no sample.
func (r *RTTStats) PTO() time.Duration {
	if r.SmoothedRTT() == 0 {
		return 2 * defaultInitialRTT
	}
	return r.SmoothedRTT() + 4*r.MeanDeviation()
}

func (r *RTTStats) ResetForPathMigration() {
	r.hasMeasurement = false
	r.minRTT = 0
	r.latestRTT = 0
	r.smoothedRTT = 0
	r.meanDeviation = 0
}
