/* Layering probe, compiled with the setup layer's include directories and
 * links (tests/layering/CMakeLists.txt): "mgr_state.h" belongs to the rat
 * manager (bridge/rat), the floor above the setup tools, so this must fail
 * to compile. */
#include "mgr_state.h"
