/* topo.h — the topology API is public: it lives in include/tlink.h ("topology" section).
 * This header stays for the files of tilelink/src that include it. */
#ifndef TLINK_TOPO_H
#define TLINK_TOPO_H
#include "tlink.h"
#endif
