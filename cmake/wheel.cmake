# What the wheel holds (pyproject.toml; doc/packaging.md), in place of the
# `cmake --install` layout of CMakeLists.txt. scikit-build-core installs into
# a staging tree: CMAKE_INSTALL_PREFIX is the wheel's platlib (site-packages),
# SKBUILD_SCRIPTS_DIR becomes the environment's bin/, SKBUILD_DATA_DIR its
# prefix (share/man, share/rat-py).

# site-packages/rat_py/bin: the rat-py program. bin/: a small launcher
# under each name of the family (rat-py, rat, rat-r, ...) that execs it with
# argv unchanged (python/launcher.c says why not the program itself).
install(TARGETS rat-py RUNTIME DESTINATION rat_py/bin)
add_executable(rat_launcher python/launcher.c)
rat_target_options(rat_launcher)
target_link_options(rat_launcher PRIVATE -s)
foreach(NAME rat-py rat rat-r rat-ju rat-sh rat-js)
  install(PROGRAMS $<TARGET_FILE:rat_launcher> DESTINATION ${SKBUILD_SCRIPTS_DIR} RENAME ${NAME})
endforeach()

# site-packages/rat_py: the binding, with librat beside it under its soname,
# one file (a wheel has no links: not the chain librat.so -> .so.0 -> .so.0.1.0).
set_target_properties(rat PROPERTIES VERSION ${PROJECT_VERSION_MAJOR})
install(TARGETS rat LIBRARY DESTINATION rat_py NAMELINK_SKIP)
install(FILES ${PROJECT_SOURCE_DIR}/python/rat_py/__init__.py ${PROJECT_SOURCE_DIR}/python/rat_py/__main__.py
        DESTINATION rat_py)
configure_file(${PROJECT_SOURCE_DIR}/cmake/wheel/_install.py.in ${PROJECT_BINARY_DIR}/wheel/_install.py @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/wheel/_install.py DESTINATION rat_py)

# share/: the man pages (the family's as .so requests: man follows them, as
# it follows the symlinks of a `cmake --install`) and the kernelspec.
install(FILES doc/rat-py.1 doc/rat.1 DESTINATION ${SKBUILD_DATA_DIR}/share/man/man1)
foreach(NAME rat-r rat-ju rat-sh rat-js)
  file(WRITE ${PROJECT_BINARY_DIR}/wheel/${NAME}.1 ".so man1/rat-py.1\n")
  install(FILES ${PROJECT_BINARY_DIR}/wheel/${NAME}.1 DESTINATION ${SKBUILD_DATA_DIR}/share/man/man1)
endforeach()
install(FILES kernelspec/kernel.json DESTINATION ${SKBUILD_DATA_DIR}/share/rat-py/kernelspec)

# rat_py.libs: the libraries rat-py loads with dlopen() at run time, which
# auditwheel cannot see; in the wheel under their sonames, in the directory
# where auditwheel puts what rat-py and librat link, which is on both's
# RUNPATH: dlopen(soname) finds this copy first, the system's otherwise.
# auditwheel then bundles what they link in turn (GnuTLS for libmicrohttpd).
# Not libcurl: its chain is some 16 MB; --gateway uses the system's
# (doc/packaging.md has the sizes).
set(RAT_WHEEL_BUNDLE "mhd;wslay;edit" CACHE STRING "The dlopen()ed libraries the wheel carries (of mhd, wslay, edit, curl)")
foreach(lib ${RAT_WHEEL_BUNDLE})
  if(lib STREQUAL "mhd")
    install(FILES ${RAT_MHD_REAL} DESTINATION rat_py.libs RENAME ${RAT_MHD_SONAME})
  else()
    install(FILES ${RAT_${lib}_REAL} DESTINATION rat_py.libs RENAME ${RAT_${lib}_SONAME})
  endif()
endforeach()
