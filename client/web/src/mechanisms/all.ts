/** Every mechanism module, imported for its registration. */
import "./duchi";
import "./hybrid";
import "./laplace";
import "./piecewise";
