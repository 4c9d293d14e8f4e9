/** Every mechanism module, imported for its registration. */
import "./randomized-response";
import "./grr";
import "./oue";
import "./olh";
import "./item-rr";
import "./duchi";
import "./hybrid";
import "./laplace";
import "./piecewise";
