# The Debian package (deploy/package.sh builds it): install rules for /usr and /etc, and
# CPack's DEB generator. Depends: comes from the programs' shared libraries
# (dpkg-shlibdeps); the maintainer scripts, the conffile list and the user's sysusers.d
# file are in deploy/debian/.
include(GNUInstallDirs)

set(PUSHONCE_DEB_RELEASE 1 CACHE STRING "The Debian revision of the package (VERSION-REVISION)")
set(pushonce_pkg ${CMAKE_BINARY_DIR}/package)
set(pushonce_debian ${CMAKE_SOURCE_DIR}/deploy/debian)

# 1. the programs
install(TARGETS pushonce-leader pushonce-worker pushonce-gateway pushonce-bench
        RUNTIME DESTINATION bin)

# 2. the units, with the package's paths (deploy/systemd/ names /usr/local for install.sh)
# (and the man page the package brings first in Documentation=)
foreach(unit pushonce-leader.service pushonce-worker@.service pushonce-gateway@.service)
  file(READ ${CMAKE_SOURCE_DIR}/deploy/systemd/${unit} text)
  string(REGEX REPLACE "^(pushonce-[a-z]+).*" "\\1" program "${unit}")
  string(REPLACE "Documentation=" "Documentation=man:${program}(1) " text "${text}")
  string(REPLACE "/usr/local/bin/" "/usr/bin/" text "${text}")
  string(REPLACE "/usr/local/share/" "/usr/share/" text "${text}")
  string(REPLACE "Installed by deploy/install.sh" "Installed by the pushonce package" text "${text}")
  file(WRITE ${pushonce_pkg}/units/${unit} "${text}")
  install(FILES ${pushonce_pkg}/units/${unit} DESTINATION /lib/systemd/system)
endforeach()
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${CMAKE_SOURCE_DIR}/deploy/systemd/pushonce-leader.service
             ${CMAKE_SOURCE_DIR}/deploy/systemd/pushonce-worker@.service
             ${CMAKE_SOURCE_DIR}/deploy/systemd/pushonce-gateway@.service)
install(FILES ${pushonce_debian}/sysusers.conf DESTINATION /usr/lib/sysusers.d
        RENAME pushonce.conf)

# 3. configuration: pushonce.env is a conffile (deploy/debian/conffiles), 0640; the postinst
# gives it the pushonce group
install(FILES ${CMAKE_SOURCE_DIR}/deploy/systemd/pushonce.env.example DESTINATION /etc/pushonce
        RENAME pushonce.env PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ)

# 4. nginx, Prometheus and Grafana files, and the docs
set(share ${CMAKE_INSTALL_DATAROOTDIR}/pushonce)
set(doc ${CMAKE_INSTALL_DATAROOTDIR}/doc/pushonce)
install(FILES ${CMAKE_SOURCE_DIR}/deploy/nginx/pushonce.conf DESTINATION ${share}/nginx)
install(FILES ${CMAKE_SOURCE_DIR}/deploy/prometheus/alerts.yml DESTINATION ${share}/prometheus)
install(FILES ${CMAKE_SOURCE_DIR}/deploy/grafana/pushonce-drop.json DESTINATION ${share}/grafana)
install(FILES ${CMAKE_SOURCE_DIR}/docs/operations.md ${CMAKE_SOURCE_DIR}/docs/protocol.md
              ${pushonce_debian}/copyright
        DESTINATION ${doc})
install(FILES ${pushonce_debian}/sysctl-pushonce.conf
              ${CMAKE_SOURCE_DIR}/deploy/systemd/pushonce.env.example
        DESTINATION ${doc}/examples)

# 5. changelogs (gzip -9n, as Debian wants them) and man pages from each program's --help
# (help2man); both made by the pushonce_package_docs target, which deploy/package.sh builds
find_program(GZIP_BIN gzip)
find_program(HELP2MAN_BIN help2man)
set(pushonce_docs_out ${pushonce_pkg}/docs)
set(pushonce_doc_files ${pushonce_docs_out}/changelog.gz ${pushonce_docs_out}/changelog.Debian.gz)
add_custom_command(
  OUTPUT ${pushonce_doc_files}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${pushonce_docs_out}
  COMMAND ${GZIP_BIN} -9nc ${CMAKE_SOURCE_DIR}/CHANGELOG.md > ${pushonce_docs_out}/changelog.gz
  COMMAND ${GZIP_BIN} -9nc ${pushonce_debian}/changelog.Debian > ${pushonce_docs_out}/changelog.Debian.gz
  DEPENDS ${CMAKE_SOURCE_DIR}/CHANGELOG.md ${pushonce_debian}/changelog.Debian
  VERBATIM)
set(pushonce_man_pages "")
if(HELP2MAN_BIN)
  set(name_pushonce-leader "pushonce queue leader daemon and admin CLI")
  set(name_pushonce-worker "pushonce worker: claims and delivers each message exactly once")
  set(name_pushonce-gateway "pushonce WebSocket, SSE and HTTP gateway")
  set(name_pushonce-bench "pushonce load generator and exactly-once verifier")
  foreach(p pushonce-leader pushonce-worker pushonce-gateway pushonce-bench)
    set(page ${pushonce_docs_out}/${p}.1.gz)
    add_custom_command(
      OUTPUT ${page}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${pushonce_docs_out}
      COMMAND ${HELP2MAN_BIN} --no-info --no-discard-stderr --section=1
              --source=pushonce "--name=${name_${p}}" --output=${pushonce_docs_out}/${p}.1 $<TARGET_FILE:${p}>
      COMMAND ${GZIP_BIN} -9nf ${pushonce_docs_out}/${p}.1
      DEPENDS ${p}
      VERBATIM)
    list(APPEND pushonce_man_pages ${page})
  endforeach()
  install(FILES ${pushonce_man_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 OPTIONAL)
endif()
add_custom_target(pushonce_package_docs DEPENDS ${pushonce_doc_files} ${pushonce_man_pages})
install(FILES ${pushonce_doc_files} DESTINATION ${doc} OPTIONAL)

# 6. CPack: one .deb, build-release/pushonce_<version>-<revision>_amd64.deb
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME pushonce)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR})
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_CONTACT "pushonce maintainers <pushonce@example.org>")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "pushonce maintainers <pushonce@example.org>")
set(CPACK_DEBIAN_PACKAGE_RELEASE ${PUSHONCE_DEB_RELEASE})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS redis-server)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "nginx, prometheus")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "message-dedup fan-out gateway and waiting room")
# The extended description (CPack puts the summary above it and indents it; an empty line
# is a paragraph break).
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "pushonce runs a waiting queue on Redis and delivers each assignment, and any
message a backend publishes, to every browser session of a user exactly once,
over WebSocket or Server-Sent Events.

This package holds pushonce-leader (queue daemon and admin CLI),
pushonce-worker, pushonce-gateway and pushonce-bench (load generator and
exactly-once verifier), systemd units running them as the pushonce user, and
example nginx, Prometheus and Grafana files under /usr/share/pushonce.")
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://example.org/pushonce")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${pushonce_debian}/postinst ${pushonce_debian}/prerm ${pushonce_debian}/postrm
    ${pushonce_debian}/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)

# In a build that has the tests too (the test command's), `make install` and cpack do not
# build everything first: deploy/package.sh --build-dir builds the programs it packages, and
# the tests' and benchmarks' targets stay out of it (the benchmarks may be building then).
if(PUSHONCE_TESTS)
  set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
endif()
