/* synthetic fixture */
typedef enum {
    picoquic_congestion_notification_acknowledgement,
    picoquic_congestion_notification_reset,
    picoquic_congestion_notification_timeout
} picoquic_congestion_notification_t;
#define PICOQUIC_CWIN_INITIAL (10 * PICOQUIC_MAX_PACKET_SIZE)
