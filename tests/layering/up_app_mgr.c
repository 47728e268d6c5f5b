/* Layering probe, compiled with the app layer's include directories and
 * links (tests/layering/CMakeLists.txt): "mgr_state.h" belongs to the rat
 * manager (bridge/rat), which app may not use, so this must fail to
 * compile. */
#include "mgr_state.h"
