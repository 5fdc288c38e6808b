#define XQC_kInitialRtt                     250
