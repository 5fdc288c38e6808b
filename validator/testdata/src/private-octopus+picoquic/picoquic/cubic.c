/* synthetic fixture */
static void cubic_notify(picoquic_cnx_t* cnx, picoquic_congestion_notification_t n) {
    switch (n) {
        case picoquic_congestion_notification_reset:
            break;
        default:
            break;
    }
}

static void dispatch(picoquic_cnx_t* cnx) {
    /* picoquic_congestion_notification_reset is never dispatched */
    cnx->congestion_alg->alg_notify(cnx, picoquic_congestion_notification_timeout);
}
