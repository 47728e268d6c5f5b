/* Layering probe, positive control: compiled with the rat manager's layer
 * (bridge/rat, the top library floor) include directories, every header the
 * probes of the floors above app name is found (so their failure is the
 * layering, not a missing file). */
#include "install.h"
#include "mgr.h"
#include "mgr_state.h"
