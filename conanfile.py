"""Conan 2 recipe for tinyt.

header_only=True packages the headers only (the package id does not depend on the settings) and
consumers compile tinyt's engine into their own program (TINYT_HEADER_ONLY); header_only=False
(the default) builds the tinyt library once, as fmt's recipe does. Either way CMakeDeps names the
target tinyt::tinyt. The version is read from include/tinyt/version.hpp, as CMake reads it.

Boost (Boost.Hana) and xtl are requirements. Offline, a profile can take them from the system
(Debian's libboost-dev and xtl-dev): tests/consumers/conan/profile declares them as
[platform_requires], and tinyt's CMake finds them with find_package as without Conan.
"""
import os
import re

from conan import ConanFile
from conan.tools.build import check_min_cppstd
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load


class TinytConan(ConanFile):
    name = "tinyt"
    description = "tinygrad's deep-learning compiler as a header-only C++20 library"
    topics = ("deep-learning", "compiler", "tensor", "header-only")
    settings = "os", "arch", "compiler", "build_type"
    options = {"header_only": [True, False], "fPIC": [True, False]}
    default_options = {"header_only": False, "fPIC": True}
    exports_sources = "CMakeLists.txt", "cmake/*", "include/*", "single_include/*", "src/*"

    def set_version(self):
        text = load(self, os.path.join(self.recipe_folder, "include", "tinyt", "version.hpp"))
        parts = [re.search(r"#define TINYT_VERSION_%s (\d+)" % p, text).group(1) for p in ("MAJOR", "MINOR", "PATCH")]
        self.version = ".".join(parts)

    def config_options(self):
        if self.settings.os == "Windows":
            del self.options.fPIC

    def configure(self):
        if self.options.header_only:
            self.options.rm_safe("fPIC")

    def validate(self):
        check_min_cppstd(self, 20)

    def requirements(self):
        # headers only: Boost.Hana and xtl's containers
        self.requires("boost/[>=1.74 <2]", transitive_headers=True, transitive_libs=False)
        self.requires("xtl/[>=0.7 <0.8]", transitive_headers=True)

    def package_id(self):
        if self.info.options.header_only:
            self.info.clear()

    def layout(self):
        cmake_layout(self)

    def generate(self):
        if self.options.header_only:
            return
        tc = CMakeToolchain(self)
        tc.cache_variables["TINYT_INSTALL"] = True
        tc.cache_variables["TINYT_WERROR"] = False  # a new compiler's new warning must not break a package build
        tc.generate()
        CMakeDeps(self).generate()

    def build(self):
        if self.options.header_only:
            return
        cmake = CMake(self)
        cmake.configure()
        cmake.build(target="tinyt")

    def package(self):
        copy(self, "*", os.path.join(self.source_folder, "include"), os.path.join(self.package_folder, "include"))
        copy(self, "tinyt.hpp", os.path.join(self.source_folder, "single_include"),
             os.path.join(self.package_folder, "single_include"))
        if not self.options.header_only:
            copy(self, "*.a", self.build_folder, os.path.join(self.package_folder, "lib"), keep_path=False)
            copy(self, "*.lib", self.build_folder, os.path.join(self.package_folder, "lib"), keep_path=False)

    def package_info(self):
        self.cpp_info.set_property("cmake_file_name", "tinyt")
        self.cpp_info.set_property("cmake_target_name", "tinyt::tinyt")
        if self.options.header_only:
            self.cpp_info.defines = ["TINYT_HEADER_ONLY"]
            self.cpp_info.bindirs = []
            self.cpp_info.libdirs = []
        else:
            self.cpp_info.libs = ["tinyt"]
        if self.settings.os in ("Linux", "FreeBSD"):
            self.cpp_info.system_libs = ["dl", "pthread"]
