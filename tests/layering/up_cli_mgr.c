/* Layering probe, compiled with the cli layer's include directories and
 * links (tests/layering/CMakeLists.txt): "mgr.h" belongs to the rat manager
 * (bridge/rat), a floor above the command line's library, so this must fail
 * to compile. */
#include "mgr.h"
