package utils

const defaultInitialRTT = 100 * time.Millisecond
