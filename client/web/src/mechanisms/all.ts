/** Every mechanism module, imported for its registration. */
