/* shape of xquic's Cubic before 1.5: the initial window is the cwnd set in init (init_cwnd only the application's override), the floor is applied in on_lost */
#define XQC_CUBIC_MSS               1460
#define XQC_CUBIC_BETA              718
#define XQC_CUBIC_BETA_SCALE        1024
#define XQC_CUBIC_MIN_WIN           (4 * XQC_CUBIC_MSS)
#define XQC_CUBIC_MAX_INIT_WIN      (100 * XQC_CUBIC_MSS)
#define XQC_CUBIC_INIT_WIN          (32 * XQC_CUBIC_MSS)

static void
xqc_cubic_init(void *cong_ctl, xqc_send_ctl_t *ctl_ctx, xqc_cc_params_t cc_params)
{
    xqc_cubic_t *cubic = (xqc_cubic_t *)(cong_ctl);
    cubic->cwnd = XQC_CUBIC_INIT_WIN;
    if (cc_params.customize_on) {
        cubic->init_cwnd =
                cc_params.init_cwnd >= XQC_CUBIC_MIN_WIN && cc_params.init_cwnd <= XQC_CUBIC_MAX_INIT_WIN ?
                cc_params.init_cwnd : XQC_CUBIC_INIT_WIN;
    }
}

static void
xqc_cubic_on_lost(void *cong_ctl, xqc_usec_t lost_sent_time)
{
    xqc_cubic_t *cubic = (xqc_cubic_t *)(cong_ctl);
    cubic->cwnd = cubic->cwnd * XQC_CUBIC_BETA / XQC_CUBIC_BETA_SCALE;
    cubic->cwnd = xqc_max(cubic->cwnd, XQC_CUBIC_MIN_WIN);
}
