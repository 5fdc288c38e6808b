#define QUIC_INITIAL_RTT                        333 // millisec
#define QUIC_INITIAL_WINDOW_PACKETS             10
#define QUIC_PERSISTENT_CONGESTION_WINDOW_PACKETS   2
#define QUIC_MIN_INITIAL_PACKET_LENGTH          1200
#define QUIC_INITIAL_PACKET_LENGTH              1240
#define CXPLAT_MIN_IPV4_HEADER_SIZE 20
#define CXPLAT_MIN_IPV6_HEADER_SIZE 40
#define CXPLAT_UDP_HEADER_SIZE 8
#define QUIC_DPLPMTUD_MIN_MTU                   (QUIC_MIN_INITIAL_PACKET_LENGTH + \
                                                CXPLAT_MIN_IPV6_HEADER_SIZE + \
                                                CXPLAT_UDP_HEADER_SIZE)
#define QUIC_DPLPMTUD_DEFAULT_MIN_MTU           (QUIC_INITIAL_PACKET_LENGTH + \
                                                CXPLAT_MIN_IPV6_HEADER_SIZE + \
                                                CXPLAT_UDP_HEADER_SIZE)
