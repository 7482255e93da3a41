# Install rules. `cmake --install build --prefix P` puts under P:
#   bin/gemmtune                          the CLI
#   lib/gemmtune/plugins/                 every family registered with gemmtune_add_plugin
#   lib/libgemmtune_runtime.so, .a        the runtime library, shared and static
#   include/gemmtune_runtime.h, .hpp      its C and C++ APIs
#   lib/cmake/gemmtune/                   find_package(gemmtune CONFIG): gemmtune::runtime,
#                                         gemmtune::runtime_static, gemmtune::gemmtune (the CLI)
#   lib/pkgconfig/gemmtune{,-static}.pc   pkg-config, for the shared library and the archive
#   share/gemmtune/configs/, report.py,   the job files and the report script the CLI uses (with
#   gemmtune_report/                      its package, which it finds beside itself)
# The CLI and the shared library find lib/gemmtune/plugins from where they are installed
# (core/src/build/plugin.cpp), so the prefix can be anything and no environment variable is needed.
include(CMakePackageConfigHelpers)

install(TARGETS gemmtune EXPORT gemmtune-targets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS gemmtune_runtime_shared gemmtune_runtime_static EXPORT gemmtune-targets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        PUBLIC_HEADER DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# Every plugin, whatever folder under plugins/ registered it (the list is complete here: this
# file is included after every subdirectory).
get_property(gemmtune_all_plugins GLOBAL PROPERTY GEMMTUNE_PLUGINS)
install(TARGETS ${gemmtune_all_plugins} LIBRARY DESTINATION ${GEMMTUNE_INSTALL_PLUGINDIR})

install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/gemmtune/configs)
install(FILES ${PROJECT_SOURCE_DIR}/tools/report.py DESTINATION ${CMAKE_INSTALL_DATADIR}/gemmtune)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/tools/gemmtune_report DESTINATION ${CMAKE_INSTALL_DATADIR}/gemmtune
        FILES_MATCHING PATTERN "*.py")

# The CMake package.
if(SQLITE3_STATIC_LIB)
  set(GEMMTUNE_FIND_SQLITE "")
else()
  set(GEMMTUNE_FIND_SQLITE "find_dependency(SQLite3)")
endif()
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/gemmtune-config.cmake.in
  ${CMAKE_BINARY_DIR}/gemmtune-config.cmake
  INSTALL_DESTINATION ${GEMMTUNE_INSTALL_CMAKEDIR}
  PATH_VARS GEMMTUNE_INSTALL_PLUGINDIR)
# 0.x: a minor version may change the API.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/gemmtune-config-version.cmake COMPATIBILITY SameMinorVersion)
install(EXPORT gemmtune-targets NAMESPACE gemmtune:: DESTINATION ${GEMMTUNE_INSTALL_CMAKEDIR})
install(FILES ${CMAKE_BINARY_DIR}/gemmtune-config.cmake ${CMAKE_BINARY_DIR}/gemmtune-config-version.cmake
        DESTINATION ${GEMMTUNE_INSTALL_CMAKEDIR})

# pkg-config, relocatable: the prefix is found from the .pc file's own folder.
file(RELATIVE_PATH GEMMTUNE_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
string(REGEX REPLACE "/$" "" GEMMTUNE_PC_TO_PREFIX "${GEMMTUNE_PC_TO_PREFIX}")
list(GET CUDAToolkit_INCLUDE_DIRS 0 GEMMTUNE_PC_CUDA_INCLUDE)
if(SQLITE3_STATIC_LIB)
  set(GEMMTUNE_PC_SQLITE ${SQLITE3_STATIC_LIB})
else()
  set(GEMMTUNE_PC_SQLITE -lsqlite3)
endif()
foreach(pc gemmtune gemmtune-static)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/${pc}.pc.in ${CMAKE_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()

# The Python wheel (python/pyproject.toml, scikit-build-core installs the component "python"
# into the package folder): the runtime library at gemmtune/lib/libgemmtune_runtime.so, where
# gemmtune._capi looks first, and the plugins at gemmtune/lib/gemmtune/plugins, where the
# library looks from its own folder (GEMMTUNE_PLUGINS_FROM_LIB). One file under the plain name
# (a wheel holds no symbolic links); no other install rule belongs to this component.
install(FILES $<TARGET_FILE:gemmtune_runtime_shared> DESTINATION ${CMAKE_INSTALL_LIBDIR} RENAME libgemmtune_runtime.so
        COMPONENT python EXCLUDE_FROM_ALL)
install(TARGETS ${gemmtune_all_plugins} LIBRARY DESTINATION ${GEMMTUNE_INSTALL_PLUGINDIR} COMPONENT python
        EXCLUDE_FROM_ALL)
