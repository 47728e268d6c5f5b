/* Layering probe, positive control: compiled with the rat manager's layer
 * (bridge/rat, the top library floor) include directories, every header the
 * up_*_mgr*.c probes name is found (so their failure is the layering, not a
 * missing file). */
#include "mgr.h"
#include "mgr_state.h"
