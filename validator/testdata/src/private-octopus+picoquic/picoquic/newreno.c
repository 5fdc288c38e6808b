/* synthetic fixture */
static void newreno_notify(picoquic_cnx_t* cnx, picoquic_congestion_notification_t n) {
    switch (n) {
    case picoquic_congestion_notification_acknowledgement:
        break;
    case picoquic_congestion_notification_reset:
        break;
    }
}
